//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// modelFinalizer is the finalizer of every model kind that has a teardown.
const modelFinalizer = "model.converge.dev/teardown"

// leafSpec is the spec of the model's leaf kinds. Counter makes every
// update a real spec change; Upstream is written by a value flow from the
// child before it in a composite; Poison and BadStatus make the handler
// fail for this spec (terminally; a status the status_schema refuses).
//
// Password is secret (writeOnly): the model writes one into every leaf it
// applies and every child a composer emits, the handler checks it arrives
// in clear, and listAll checks no read-back holds it. The status's token
// is secret too (x-converge-secret).
type leafSpec struct {
	Counter   int    `json:"counter"`
	Password  string `json:"password,omitempty"`
	Upstream  string `json:"upstream,omitempty"`
	Poison    bool   `json:"poison,omitempty"`
	BadStatus bool   `json:"bad_status,omitempty"`
}

// compSpec is the spec of the model's composite kinds: the composer emits
// N children of ChildKind v1 named <composite>-<i>, child i depending on
// child i-1 with a value flow /value -> /upstream.
type compSpec struct {
	Counter   int    `json:"counter"`
	N         int    `json:"n"`
	ChildKind string `json:"child_kind"`
	Poison    bool   `json:"poison,omitempty"`
}

func (f *fleet) reconcile(_ context.Context, t *converge.Task, b behaviour) (*converge.Result, error) {
	var spec leafSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	switch {
	case b.mode == behTerminal:
		return nil, converge.Terminal(fmt.Errorf("model: terminal failure of %s/%s", t.Kind, t.Name))
	case spec.Poison:
		return nil, converge.Terminal(errPoison)
	case spec.BadStatus:
		// value must be a string: the server refuses this status.
		return &converge.Result{Status: map[string]any{"value": 42, "counter": spec.Counter}}, nil
	}
	if spec.Password != "" && spec.Password != modelPassword(t.Name, spec.Counter) {
		f.secretMismatch(fmt.Sprintf("%s/%s gen %d received password %q, want %q in clear", t.Kind, t.Name, t.Generation, spec.Password, modelPassword(t.Name, spec.Counter)))
	}
	return &converge.Result{Status: map[string]any{
		"value": fmt.Sprintf("%s-g%d", t.Name, t.Generation), "counter": spec.Counter,
		"token": fmt.Sprintf("%s%s-g%d", modelSecretMark, t.Name, t.Generation)}}, nil
}

// modelSecretMark starts every clear secret value of the model, so a
// read-back holding one is found by a substring search.
const modelSecretMark = "model-secret-"

// modelPassword is the secret password of a leaf spec at counter.
func modelPassword(name string, counter int) string {
	return fmt.Sprintf("%spw-%s-%d", modelSecretMark, name, counter)
}

// secretMismatch notes a handler that did not get its secret in clear;
// listAll fails the case with it.
func (f *fleet) secretMismatch(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.secretErrs) < 10 {
		f.secretErrs = append(f.secretErrs, msg)
	}
}

// childrenOf is what the composer emits for a composite's spec; the model
// uses it too, so both agree on which children exist.
func childrenOf(name string, spec compSpec) ([]converge.Child, []converge.Edge) {
	var kids []converge.Child
	var edges []converge.Edge
	for i := range spec.N {
		c := converge.Child{Kind: spec.ChildKind, KindVersion: 1, Name: childName(name, i),
			Spec: leafSpec{Counter: spec.Counter, Poison: spec.Poison, Password: modelPassword(childName(name, i), spec.Counter)}}
		kids = append(kids, c)
		if i > 0 {
			edges = append(edges, converge.DependsOn(c.Ref(), kids[i-1].Ref(), converge.FlowFrom("/value", "/upstream")))
		}
	}
	return kids, edges
}

func childName(composite string, i int) string { return fmt.Sprintf("%s-%d", composite, i) }

func (f *fleet) compose(_ context.Context, t *converge.Task, b behaviour) (*converge.Result, error) {
	var spec compSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	if b.mode == behTerminal {
		return nil, converge.Terminal(fmt.Errorf("model: terminal failure of %s/%s", t.Kind, t.Name))
	}
	kids, edges := childrenOf(t.Name, spec)
	return &converge.Result{Compose: true, Children: kids, Edges: edges, Status: map[string]any{"children": spec.N}}, nil
}

// settled is a composite's childrenSettled reaction: it marks the status
// as projected, which a Ready composite must then show. Like teardown it
// never fails terminally: the model predicts a composite's phase from its
// composer alone.
func (f *fleet) settled(_ context.Context, t *converge.Task, _ behaviour) (*converge.Result, error) {
	var spec compSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	return &converge.Result{Status: map[string]any{"children": spec.N, "settled": true}}, nil
}

// teardown clears the finalizer. It never fails terminally: a teardown
// that cannot finish would keep its resource forever, and the model's heal
// phase could not end it; a terminal behaviour fails it transiently.
func (f *fleet) teardown(_ context.Context, t *converge.Task, b behaviour) (*converge.Result, error) {
	f.mu.Lock()
	f.teardownStatus[t.Kind+"/"+t.Name] = append([]byte(nil), t.Status...)
	f.teardownRejected[t.Kind+"/"+t.Name] = append([]byte(nil), t.RejectedStatus...)
	f.mu.Unlock()
	if b.mode == behTerminal {
		return nil, fmt.Errorf("model: teardown of %s/%s fails (terminal behaviour, reported transient)", t.Kind, t.Name)
	}
	return &converge.Result{}, nil
}

func (f *fleet) operation(_ context.Context, t *converge.Task, b behaviour) (*converge.Result, error) {
	if b.mode == behTerminal {
		return nil, converge.Terminal(fmt.Errorf("model: operation %s fails terminally", t.Operation.Verb))
	}
	return &converge.Result{Output: map[string]any{"ok": true}}, nil
}

// modelManifest is the manifest of a model kind version with policy p.
// Version 2 of a leaf kind adds an optional spec field, as a version move
// would.
func modelManifest(def kindDef, version int, p *convergev1.KindPolicy, config bool) *convergev1.KindManifest {
	m := &convergev1.KindManifest{Kind: def.name, KindVersion: int32(version), Owner: "model", Policy: p}
	if def.composite {
		m.SpecSchema = mustStructOf(map[string]any{"type": "object", "properties": map[string]any{
			"counter": map[string]any{"type": "integer"}, "n": map[string]any{"type": "integer", "minimum": 0, "maximum": 8},
			"child_kind": map[string]any{"type": "string"}, "poison": map[string]any{"type": "boolean"}}})
		m.StatusSchema = mustStructOf(map[string]any{"type": "object", "properties": map[string]any{
			"children": map[string]any{"type": "integer"}, "settled": map[string]any{"type": "boolean"}}})
		m.Reactions = []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}}
		if def.settles {
			m.Reactions = append(m.Reactions, &convergev1.Reaction{Name: "settled", Trigger: "childrenSettled", Emits: []string{"status"}})
		}
	} else {
		props := map[string]any{"counter": map[string]any{"type": "integer"}, "upstream": map[string]any{"type": "string"},
			"password": map[string]any{"type": "string", "writeOnly": true},
			"poison":   map[string]any{"type": "boolean"}, "bad_status": map[string]any{"type": "boolean"}}
		if version > 1 {
			props["extra"] = map[string]any{"type": "string"}
		}
		m.SpecSchema = mustStructOf(map[string]any{"type": "object", "properties": props})
		m.StatusSchema = mustStructOf(map[string]any{"type": "object", "properties": map[string]any{
			"value": map[string]any{"type": "string"}, "counter": map[string]any{"type": "integer"},
			"token": map[string]any{"type": "string", "x-converge-secret": true}}})
		m.Reactions = []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "observe", Trigger: "observe", Emits: []string{"status"}}}
	}
	if def.finalizer {
		m.Finalizer = modelFinalizer
		m.Reactions = append(m.Reactions, &convergev1.Reaction{Name: "teardown", Trigger: "deleteRequested", Emits: []string{"finalizer"}})
	}
	if def.verb != "" {
		m.Operations = []*convergev1.OperationDecl{{Verb: def.verb}}
		m.Reactions = append(m.Reactions, &convergev1.Reaction{Name: def.verb, Trigger: "operation", Verb: def.verb, Emits: []string{"operationOutput"}})
	}
	if config {
		m.ConfigSchema = mustStructOf(map[string]any{"type": "object", "properties": map[string]any{"region": map[string]any{"type": "string"}}})
	}
	return m
}

// mustStructOf converts a JSON-like value (maps, slices, structs) to a
// Struct; the values here are the test's own, so a failure is a bug in it.
func mustStructOf(v any) *structpb.Struct {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(err)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		panic(err)
	}
	return s
}
