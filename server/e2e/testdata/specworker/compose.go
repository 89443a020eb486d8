package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// compositeSpec is the spec of the composite kinds: the children and edges
// to emit, as they are.
type compositeSpec struct {
	Children []childSpec `json:"children"`
	Edges    []edgeSpec  `json:"edges"`
	// Bulk adds Count children of Kind with empty specs, named
	// <composite>-bulk-<i>.
	Bulk *bulkSpec `json:"bulk"`
}

type childSpec struct {
	Kind string         `json:"kind"`
	Name string         `json:"name"`
	Spec map[string]any `json:"spec"`
}

// edgeSpec names its ends as KIND/NAME.
type edgeSpec struct {
	Dependent  string     `json:"dependent"`
	Dependency string     `json:"dependency"`
	Flows      []flowSpec `json:"flows"`
}

type flowSpec struct {
	From string `json:"from"`
	Expr string `json:"expr"`
	To   string `json:"to"`
}

type bulkSpec struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
}

// compose emits the children and edges the composite's spec lists.
func (h *handlers) compose(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	start := time.Now()
	var spec compositeSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	if h.composeDelay > 0 {
		// The test waits for this line before it kills the worker.
		fmt.Printf("composing %s/%s\n", t.Kind, t.Name)
		if err := sleep(ctx, h.composeDelay); err != nil {
			return nil, err
		}
	}
	res := &converge.Result{Compose: true}
	for _, c := range spec.Children {
		res.Children = append(res.Children, converge.Child{Kind: c.Kind, KindVersion: kindVersion, Name: c.Name, Spec: c.Spec})
	}
	if b := spec.Bulk; b != nil {
		for i := range b.Count {
			res.Children = append(res.Children, converge.Child{Kind: b.Kind, KindVersion: kindVersion, Name: fmt.Sprintf("%s-bulk-%d", t.Name, i)})
		}
	}
	for i, e := range spec.Edges {
		edge, err := e.edge()
		if err != nil {
			return nil, converge.Terminal(fmt.Errorf("spec.edges[%d]: %w", i, err))
		}
		res.Edges = append(res.Edges, edge)
	}
	res.Status = map[string]any{"children": len(res.Children)}
	h.records.add(record{Event: "compose", Kind: t.Kind, Name: t.Name, Generation: t.Generation, Start: start, End: time.Now()})
	return res, nil
}

func (e edgeSpec) edge() (converge.Edge, error) {
	dependent, err := parseRef(e.Dependent)
	if err != nil {
		return converge.Edge{}, fmt.Errorf("dependent: %w", err)
	}
	dependency, err := parseRef(e.Dependency)
	if err != nil {
		return converge.Edge{}, fmt.Errorf("dependency: %w", err)
	}
	edge := converge.DependsOn(dependent, dependency)
	for _, f := range e.Flows {
		if f.Expr != "" {
			edge.Flows = append(edge.Flows, converge.FlowExpr(f.Expr, f.To))
		} else {
			edge.Flows = append(edge.Flows, converge.FlowFrom(f.From, f.To))
		}
	}
	return edge, nil
}

func parseRef(s string) (converge.Ref, error) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" {
		return converge.Ref{}, fmt.Errorf("%q is not KIND/NAME", s)
	}
	return converge.RefTo(kind, name), nil
}

// summarize is the summary kind's childrenSettled reaction: it adds the
// rollup it was given to the composite's status.
func (h *handlers) summarize(_ context.Context, t *converge.Task) (*converge.Result, error) {
	start := time.Now()
	r := t.Rollup
	if r == nil {
		return nil, converge.Terminal(errors.New("the childrenSettled task carries no rollup"))
	}
	status := map[string]any{}
	if len(t.Status) > 0 {
		if err := json.Unmarshal(t.Status, &status); err != nil {
			return nil, converge.Terminal(fmt.Errorf("status: %w", err))
		}
	}
	counts := rollupCounts{Total: r.Total, Ready: r.Ready, Reconciling: r.Reconciling, Degraded: r.Degraded, Failed: r.Failed}
	status["settled"] = counts
	h.records.add(record{Event: "settled", Kind: t.Kind, Name: t.Name, Generation: t.Generation, Start: start, End: time.Now(), Rollup: &counts})
	return &converge.Result{Status: status}, nil
}
