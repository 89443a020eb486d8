package broker

import (
	"encoding/json"
	"fmt"
	"runtime"
	"sync"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/storable"
	"github.com/convergehq/converge/server/internal/store"
)

// childrenPerWorker is the least number of children worth a goroutine of
// their own when a composition's children are checked.
const childrenPerWorker = 2048

// checkChildren checks a composition's children and turns them into what
// the store writes: names unique, kinds registered and not reactors, specs
// JSON objects within the limits that match their kind's spec_schema, with
// secret values sealed. It returns the children and the index of each by
// kind and name, or the problem of the first child (in order) that has one.
// Checking a child reads nothing another child writes, so large
// compositions are checked on every core: a 100,000-child answer otherwise
// spends half a second here before the store sees it.
func (b *Broker) checkChildren(children []*convergev1.Child) ([]store.ChildSpec, map[[2]string]int, string) {
	if len(children) > limits.MaxChildren {
		return nil, nil, fmt.Sprintf("the composer emitted more than %d children (the limit per composite; docs/limits.md)", limits.MaxChildren)
	}
	specs, bad, msg := b.checkEach(children)
	index := make(map[[2]string]int, len(children))
	for i, ch := range children {
		// A child is checked for being a duplicate before anything else.
		k := [2]string{ch.GetKind(), ch.GetName()}
		if j, dup := index[k]; dup {
			return nil, nil, fmt.Sprintf("%s: the same child is also children[%d]", childWhere(i, ch), j)
		}
		if i == bad {
			return nil, nil, msg
		}
		index[k] = i
	}
	return specs, index, ""
}

// checkEach checks each child on its own (checkChild) in parallel slices,
// and returns the index and problem of the first child that has one, or
// -1.
func (b *Broker) checkEach(children []*convergev1.Child) ([]store.ChildSpec, int, string) {
	out := make([]store.ChildSpec, len(children))
	msgs := make([]string, len(children))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(children)/childrenPerWorker))
	per := (len(children) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*per, min((w+1)*per, len(children))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				out[i], msgs[i] = b.checkChild(children[i])
				if msgs[i] != "" {
					return // later children of this slice cannot be reported first
				}
			}
		}()
	}
	wg.Wait()
	for i, m := range msgs {
		if m != "" {
			return nil, i, childWhere(i, children[i]) + ": " + m
		}
	}
	return out, -1, ""
}

func childWhere(i int, ch *convergev1.Child) string {
	return fmt.Sprintf("children[%d] %s/%s", i, ch.GetKind(), ch.GetName())
}

// checkChild checks one child (see checkChildren) and returns it as the
// store writes it, or its problem.
func (b *Broker) checkChild(ch *convergev1.Child) (store.ChildSpec, string) {
	ce := b.kinds.Get(ch.GetKind(), ch.GetKindVersion())
	if ce == nil {
		return store.ChildSpec{}, fmt.Sprintf("kind %s v%d is not registered", ch.GetKind(), ch.GetKindVersion())
	}
	if ce.Compiled.IsReactor() {
		return store.ChildSpec{}, fmt.Sprintf("kind %s v%d is a reactor kind and cannot have resources", ch.GetKind(), ch.GetKindVersion())
	}
	spec := ch.GetSpec()
	if len(spec) == 0 {
		spec = []byte("{}")
	}
	if len(spec) > limits.MaxSpecBytes {
		return store.ChildSpec{}, fmt.Sprintf("spec is %d bytes; the limit is %d", len(spec), limits.MaxSpecBytes)
	}
	doc, err := schema.Decode(spec)
	if err != nil {
		return store.ChildSpec{}, fmt.Sprintf("spec: %v", err)
	}
	if _, isObject := doc.(map[string]any); !isObject {
		return store.ChildSpec{}, "spec must be a JSON object"
	}
	if path, why := storable.JSON(doc, "spec"); why != "" {
		return store.ChildSpec{}, path + ": " + why
	}
	if err := ce.ValidateSpec(doc); err != nil {
		return store.ChildSpec{}, fmt.Sprintf("spec does not match the spec_schema of %s v%d: %v", ce.Kind, ce.Version, err)
	}
	spec, msg := b.sealOutput(ce.Compiled.Spec, spec, doc)
	if msg != "" {
		return store.ChildSpec{}, "spec " + msg
	}
	labels := []byte("{}")
	if len(ch.GetLabels()) > 0 {
		labels, _ = json.Marshal(ch.GetLabels())
	}
	return store.ChildSpec{Kind: ch.GetKind(), Version: ch.GetKindVersion(), Name: ch.GetName(),
		Labels: labels, Spec: spec, KindRevision: ce.Revision}, ""
}
