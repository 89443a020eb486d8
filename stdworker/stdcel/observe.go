package stdcel

import (
	"errors"
	"fmt"
	"strings"
)

// Observed is what the server holds of one child: its spec (with the
// flowed values in) and status, decoded JSON.
type Observed struct {
	Spec, Status map[string]any
}

// Observation is what a graph makes of an instance's children.
type Observation struct {
	// Status is the instance's status: the graph's status projection,
	// without the fields whose values do not exist yet; nil when it does
	// not satisfy the graph's status_schema yet (see Unprojected).
	Status map[string]any
	// NotReady says, per child, why it is not ready: it does not exist
	// yet, or a readyWhen condition is false or cannot be evaluated yet.
	NotReady []string
	// Unprojected says why a status field could not be computed, for
	// failures other than a value that does not exist yet.
	Unprojected []string
}

// Ready reports whether every child is ready.
func (o *Observation) Ready() bool { return len(o.NotReady) == 0 }

// Observe evaluates readyWhen for every child of plan and projects the
// instance's status, from the children as the server holds them, keyed
// by "kind/name". A forEach resource reads as the list of its children.
func (g *Graph) Observe(inst Instance, plan *Plan, children map[string]Observed) *Observation {
	base := g.bindings(inst)
	act := make(map[string]any, len(base)+len(g.nodes))
	for k, v := range base {
		act[k] = v
	}
	for _, n := range g.nodes {
		if n.collection {
			act[n.id] = []any{}
		}
	}
	obs := &Observation{}
	for _, m := range plan.Members {
		n := g.byID[m.ID]
		o, ok := children[m.Child.Kind+"/"+m.Child.Name]
		if !ok {
			obs.NotReady = append(obs.NotReady, fmt.Sprintf("%s %s/%s does not exist yet", n.id, m.Child.Kind, m.Child.Name))
			continue
		}
		doc := map[string]any{"spec": orEmptyMap(o.Spec), "status": orEmptyMap(o.Status)}
		if n.collection {
			act[n.id] = append(act[n.id].([]any), doc)
		} else {
			act[n.id] = doc
		}
		if why := readyWhy(n, m, base, doc); why != "" {
			obs.NotReady = append(obs.NotReady, why)
		}
	}
	obs.Status = g.projectStatus(act, &obs.Unprojected)
	return obs
}

// projectStatus projects the status over act; nil (leave the status as
// it is) when it does not satisfy the graph's status_schema yet.
func (g *Graph) projectStatus(act map[string]any, problems *[]string) map[string]any {
	v, _ := project(g.status, act, problems)
	status, _ := v.(map[string]any)
	if status == nil {
		status = map[string]any{}
	}
	if err := g.checkStatus(status); err != nil {
		*problems = append(*problems, err.Error())
		return nil
	}
	return status
}

// Project is the instance's status as far as its spec alone says: the
// projected fields that read no resource, on top of current (the status
// the instance has). Nil when the result does not satisfy the graph's
// status_schema.
func (g *Graph) Project(inst Instance, current map[string]any) map[string]any {
	var ignored []string
	v, _ := project(g.status, g.bindings(inst), &ignored)
	status := copyJSON(orEmptyMap(current)).(map[string]any)
	if fields, ok := v.(map[string]any); ok {
		for k, f := range fields {
			status[k] = f
		}
	}
	if g.checkStatus(status) != nil {
		return nil
	}
	return status
}

// readyWhy says why child m of n is not ready, or "" when it is.
func readyWhy(n *node, m Member, base map[string]any, doc map[string]any) string {
	act := make(map[string]any, len(base)+len(m.vars)+1)
	for k, v := range base {
		act[k] = v
	}
	for k, v := range m.vars {
		act[k] = v
	}
	act[n.id] = doc
	for j, e := range n.ready {
		v, err := evalJSON(e, act)
		if err != nil {
			return fmt.Sprintf("%s %s/%s: readyWhen[%d] cannot be evaluated yet: %v", n.id, m.Child.Kind, m.Child.Name, j, err)
		}
		if b, _ := v.(bool); !b {
			return fmt.Sprintf("%s %s/%s: readyWhen[%d] ${%s} is false", n.id, m.Child.Kind, m.Child.Name, j, e.src)
		}
	}
	return ""
}

// project evaluates a status template over everything known; a field
// whose value does not exist yet is left out.
func project(t *tmpl, act map[string]any, problems *[]string) (any, bool) {
	switch t.kind {
	case tLiteral:
		return copyJSON(t.lit), true
	case tObject:
		out := map[string]any{}
		for _, k := range t.keys {
			if v, ok := project(t.fields[k], act, problems); ok {
				out[k] = v
			}
		}
		return out, true
	case tArray:
		out := make([]any, 0, len(t.items))
		for _, it := range t.items {
			v, _ := project(it, act, problems)
			out = append(out, v)
		}
		return out, true
	case tExpr:
		v, err := evalJSON(t.whole, act)
		if err != nil {
			noteProjection(err, problems)
			return nil, false
		}
		return v, true
	case tInterp:
		var b strings.Builder
		for _, p := range t.parts {
			if p.e == nil {
				b.WriteString(p.text)
				continue
			}
			s, err := evalToString(p.e, act)
			if err != nil {
				noteProjection(err, problems)
				return nil, false
			}
			b.WriteString(s)
		}
		return b.String(), true
	}
	return nil, false
}

// noteProjection records a projection failure unless it only means a
// value does not exist yet.
func noteProjection(err error, problems *[]string) {
	if errors.Is(err, errNone) || isMissing(err) {
		return
	}
	*problems = append(*problems, err.Error())
}

// isMissing reports whether an evaluation failed only because a value it
// reads does not exist yet.
func isMissing(err error) bool {
	msg := err.Error()
	for _, s := range []string{"no such key", "no such attribute", "index out of bounds"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
