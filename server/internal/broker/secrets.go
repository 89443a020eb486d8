package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/store"
)

// openTask returns the task with every sealed value of its resource and
// config opened: the worker the task goes to is the one reader of a
// resource's secrets (a reactor's watched status is redacted instead). A task with
// nothing sealed is returned as it is; otherwise a copy, so the task
// record keeps the sealed form.
func (b *Broker) openTask(t *convergev1.Task) (*convergev1.Task, error) {
	res := t.GetResource()
	if !secret.Contains(res.GetSpec()) && !secret.Contains(res.GetStatus()) && !secret.Contains(res.GetRejectedStatus()) &&
		!secret.Contains(t.GetConfig()) && !secret.Contains(t.GetReactor().GetWatchedStatus()) {
		return t, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	keys := b.kinds.Secrets()
	out := proto.CloneOf(t)
	var err error
	open := func(field string, raw []byte) []byte {
		if err != nil {
			return raw
		}
		var opened []byte
		if opened, err = keys.OpenJSON(ctx, raw); err != nil {
			err = fmt.Errorf("%s: %w", field, err)
		}
		return opened
	}
	if r := out.GetResource(); r != nil {
		r.Spec, r.Status, r.RejectedStatus = open("spec", r.Spec), open("status", r.Status), open("rejected status", r.RejectedStatus)
	}
	out.Config = open("config", out.Config)
	if r := out.GetReactor(); r != nil {
		// A reactor is not the watched resource's worker: it sees the
		// watched status's secrets as markers.
		r.WatchedStatus = secret.RedactJSON(r.WatchedStatus)
	}
	return out, err
}

// sealOutput seals the secret values of a document a worker returned (a
// status, a child's spec) at sch's secret paths, once it was validated in
// the clear: doc (raw decoded) is sealed in place. A worker never holds an
// envelope, so one in its output is refused, naming the path; the error is
// the message of a failed task.
func (b *Broker) sealOutput(sch *schema.Schema, raw []byte, doc any) ([]byte, string) {
	if secret.Contains(raw) {
		if err := secret.RefuseEnvelopes(doc); err != nil {
			return nil, err.Error()
		}
	}
	if len(sch.Secrets()) == 0 {
		return raw, ""
	}
	sealed, err := b.kinds.Secrets().Seal(doc, sch.Secrets())
	if err == nil {
		raw, err = json.Marshal(sealed)
	}
	if err != nil {
		return nil, "sealing the secret values failed: " + err.Error()
	}
	return raw, ""
}

// recorded is the result as its task record keeps it: a status with
// secret properties as it was stored (sealed), never as the worker sent it.
func recorded(r *convergev1.TaskResult, out store.Outcome, e *kinds.Entry) *convergev1.TaskResult {
	if e == nil || len(e.Compiled.Status.Secrets()) == 0 || len(r.GetSuccess().GetStatus()) == 0 {
		return r
	}
	c := proto.CloneOf(r)
	switch {
	case out.Status != nil:
		c.GetSuccess().Status = out.Status
	case out.RejectedStatus != nil:
		c.GetSuccess().Status = out.RejectedStatus
	default:
		c.GetSuccess().Status = nil
	}
	return c
}

// sealPreview seals a preview's result as the applier would have stored
// it (its status, its children's specs), since the plan that asked keeps
// and shows it.
func (b *Broker) sealPreview(e *kinds.Entry, r *convergev1.TaskResult) (*convergev1.TaskResult, string) {
	ok := r.GetSuccess()
	if ok == nil {
		return r, ""
	}
	c := proto.CloneOf(r)
	ok = c.GetSuccess()
	seal := func(sch *schema.Schema, raw []byte) ([]byte, string) {
		if len(raw) == 0 {
			return raw, ""
		}
		doc, err := schema.Decode(raw)
		if err != nil {
			return nil, err.Error()
		}
		return b.sealOutput(sch, raw, doc)
	}
	var why string
	if ok.Status, why = seal(e.Compiled.Status, ok.Status); why != "" {
		return nil, "status: " + why
	}
	for i, ch := range ok.GetComposition().GetChildren() {
		ce := b.kinds.Get(ch.GetKind(), ch.GetKindVersion())
		if ce == nil {
			continue
		}
		if ch.Spec, why = seal(ce.Compiled.Spec, ch.Spec); why != "" {
			return nil, fmt.Sprintf("children[%d] spec: %s", i, why)
		}
	}
	return c, ""
}

// flowSecrecy returns the check of secret.CheckFlow for flows from a
// child of kind dependency into one of kind dependent.
func (b *Broker) flowSecrecy(dependency, dependent store.ChildSpec) func(*flow.Program) error {
	dep, dnt := b.kinds.Get(dependency.Kind, dependency.Version), b.kinds.Get(dependent.Kind, dependent.Version)
	if dep == nil || dnt == nil {
		return nil
	}
	s := secret.FlowSchemas{
		Dependency: fmt.Sprintf("%s v%d", dep.Kind, dep.Version), Dependent: fmt.Sprintf("%s v%d", dnt.Kind, dnt.Version),
		DependencyStatus: dep.Compiled.Status, DependencySpec: dep.Compiled.Spec, DependentSpec: dnt.Compiled.Spec,
	}
	return func(p *flow.Program) error { return secret.CheckFlow(p, s) }
}
