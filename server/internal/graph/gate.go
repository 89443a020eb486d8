package graph

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// Decide is the gate, the one rule for when a dependent may go and with
// what spec (the plan of a change previews with it too): a dependent waits until every dependency is synced
// and every flow has its value; then its spec is the desired spec with
// the flowed values written in, and it must still match its kind's spec
// schema.
func Decide(flows *flow.Cache, reg *kinds.Registry, in store.GateInput) store.GateDecision {
	var writes []flow.Write
	for _, d := range in.Deps {
		name := d.Ref.Kind + "/" + d.Ref.Name
		if d.Blocks && d.Deleting {
			return store.GateDecision{Waiting: fmt.Sprintf("waiting for %s: it is being deleted, and comes back once its composite composes it again", name)}
		}
		if d.Blocks {
			return store.GateDecision{Waiting: fmt.Sprintf("waiting for %s to sync (it is %s)", name, d.Phase)}
		}
		var specs []flow.Spec
		if err := json.Unmarshal(d.Flows, &specs); err != nil {
			return store.GateDecision{Waiting: fmt.Sprintf("the flows from %s cannot be read: %v", name, err)}
		}
		if len(specs) == 0 {
			continue
		}
		status, err := schema.Decode(orEmpty(d.Status))
		if err != nil {
			return store.GateDecision{Waiting: fmt.Sprintf("the status of %s cannot be read: %v", name, err)}
		}
		spec, err := schema.Decode(orEmpty(d.Spec))
		if err != nil {
			return store.GateDecision{Waiting: fmt.Sprintf("the spec of %s cannot be read: %v", name, err)}
		}
		ws, failed, err := evalFlows(flows, reg, in, specs, status, spec)
		var invalid *flow.CompileError
		switch {
		case errors.As(err, &invalid):
			return store.GateDecision{Waiting: fmt.Sprintf("flow from %s is invalid: %v", name, err)}
		case errors.Is(err, flow.ErrMissing):
			return store.GateDecision{Waiting: fmt.Sprintf("waiting for %s: %v", name, err)}
		case err != nil:
			return store.GateDecision{Waiting: fmt.Sprintf("flow from %s to %s failed: %v", name, failed.To, err)}
		}
		writes = append(writes, ws...)
	}
	desired, err := schema.Decode(orEmpty(in.Spec))
	if err != nil {
		return store.GateDecision{Waiting: fmt.Sprintf("the desired spec cannot be read: %v", err)}
	}
	effective, _, err := flow.Apply(desired, writes)
	if err != nil {
		return store.GateDecision{Waiting: fmt.Sprintf("writing the flowed values failed: %v", err)}
	}
	if e := reg.Get(in.Kind, in.Version); e != nil {
		clear, sealed, err := sealFlowed(reg, e, effective)
		if err != nil {
			return store.GateDecision{Waiting: fmt.Sprintf("sealing the flowed secret values failed: %v", err)}
		}
		effective = sealed
		if err := e.ValidateSpec(clear); err != nil {
			return store.GateDecision{Waiting: fmt.Sprintf("with the flowed values the spec does not match the spec_schema of %s v%d: %v",
				e.Kind, e.Version, err)}
		}
	}
	out, err := json.Marshal(effective)
	if err != nil {
		return store.GateDecision{Waiting: fmt.Sprintf("encoding the spec failed: %v", err)}
	}
	return store.GateDecision{Spec: out}
}

func orEmpty(b []byte) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}
