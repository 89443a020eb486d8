package stdcel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

// instance serves a kind a graph defines: compose evaluates the graph for
// an instance; rollup checks readyWhen and projects the status once the
// children settle.
type instance struct {
	sv *served
}

// Name implements provider.Provider.
func (i *instance) Name() string { return Name }

// Register implements provider.Provider.
func (i *instance) Register(_ context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	m := s.Manifest
	if err := needReactions(m, reactionCompose, reactionRollup); err != nil {
		return err
	}
	kind, version := m.GetKind(), int(m.GetKindVersion())
	w.Handle(kind, version, reactionCompose, i.compose)
	w.Handle(kind, version, reactionRollup, func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		return i.rollup(ctx, t, env)
	})
	return nil
}

func (i *instance) compose(_ context.Context, t *converge.Task) (*converge.Result, error) {
	g := i.sv.graph.Load()
	inst, err := taskInstance(t)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	plan, err := g.Compose(inst)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	current, err := decodeObject(t.Status)
	if err != nil {
		return nil, converge.Terminal(fmt.Errorf("status: %w", err))
	}
	res := &converge.Result{Compose: true, Children: plan.Children(), Edges: plan.Edges}
	if status := g.Project(inst, current); status != nil {
		res.Status = status
	}
	return res, nil
}

// maxNotReady bounds the children a condition names.
const maxNotReady = 10

func (i *instance) rollup(ctx context.Context, t *converge.Task, env provider.Env) (*converge.Result, error) {
	g := i.sv.graph.Load()
	inst, err := taskInstance(t)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	plan, err := g.Compose(inst)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	observed, err := observeChildren(ctx, env, t)
	if err != nil {
		return nil, err
	}
	obs := g.Observe(inst, plan, observed)
	cond := converge.Condition{Type: "ResourcesReady", Status: converge.ConditionTrue, Reason: "ReadyWhen",
		Message: fmt.Sprintf("all %d resources are ready", len(plan.Members))}
	if !obs.Ready() {
		cond.Status, cond.Reason = converge.ConditionFalse, "NotReady"
		cond.Message = summarize(obs.NotReady)
	}
	conds := []converge.Condition{cond}
	if len(obs.Unprojected) > 0 {
		conds = append(conds, converge.Condition{Type: "StatusProjected", Status: converge.ConditionFalse,
			Reason: "EvalError", Message: summarize(obs.Unprojected)})
	}
	return &converge.Result{Status: obs.Status, Unhealthy: !obs.Ready(), Conditions: conds}, nil
}

// observeChildren reads the instance's children, by "kind/name", in pages.
func observeChildren(ctx context.Context, env provider.Env, t *converge.Task) (map[string]Observed, error) {
	out := map[string]Observed{}
	token := ""
	for {
		res, err := env.Control.ListResources(ctx, &convergev1.ListResourcesRequest{Namespace: t.Namespace,
			LabelSelector: LabelInstance + "=" + t.Name, PageSize: 1000, PageToken: token})
		if err != nil {
			return nil, fmt.Errorf("listing the children of %s/%s: %w", t.Kind, t.Name, err)
		}
		for _, r := range res.GetResources() {
			if o := r.GetOwner(); o.GetKind() != t.Kind || o.GetName() != t.Name {
				continue // another kind's instance of the same name
			}
			ob, err := observedOf(r)
			if err != nil {
				return nil, fmt.Errorf("reading child %s/%s: %w", r.GetKind(), r.GetName(), err)
			}
			out[r.GetKind()+"/"+r.GetName()] = ob
		}
		if token = res.GetNextPageToken(); token == "" {
			return out, nil
		}
	}
}

func summarize(msgs []string) string {
	if len(msgs) > maxNotReady {
		return strings.Join(msgs[:maxNotReady], "; ") + fmt.Sprintf("; and %d more", len(msgs)-maxNotReady)
	}
	return strings.Join(msgs, "; ")
}

func taskInstance(t *converge.Task) (Instance, error) {
	spec, err := decodeObject(t.Spec)
	if err != nil {
		return Instance{}, fmt.Errorf("spec: %w", err)
	}
	return Instance{Namespace: t.Namespace, Name: t.Name, Spec: spec}, nil
}

func observedOf(r *convergev1.Resource) (Observed, error) {
	var o Observed
	for _, x := range []struct {
		src interface{ MarshalJSON() ([]byte, error) }
		dst *map[string]any
		ok  bool
	}{{r.GetSpec(), &o.Spec, r.GetSpec() != nil}, {r.GetStatus(), &o.Status, r.GetStatus() != nil}} {
		if !x.ok {
			continue
		}
		raw, err := x.src.MarshalJSON()
		if err != nil {
			return o, err
		}
		if *x.dst, err = decodeObject(raw); err != nil {
			return o, err
		}
	}
	return o, nil
}

// decodeObject decodes a JSON object, numbers as json.Number; empty is {}.
func decodeObject(raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}
