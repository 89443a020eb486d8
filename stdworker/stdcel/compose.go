package stdcel

import (
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/common/types"
	"github.com/convergehq/converge/internal/celschema"
	"github.com/convergehq/converge/sdk-go/converge"
)

// Labels every child carries: the graph resource (its id) it was made
// from, and the instance it belongs to (so the rollup lists an instance's
// children in one call).
const (
	LabelResource = "stdcel.converge.dev/resource"
	LabelInstance = "stdcel.converge.dev/instance"
)

// Instance is one resource of the kind a graph defines.
type Instance struct {
	Namespace string
	Name      string
	// Spec is the instance's spec, decoded JSON.
	Spec map[string]any
}

// Member is one child of a composed instance.
type Member struct {
	// ID is the graph resource the child was made from.
	ID string
	// Child is the child as the composer returns it.
	Child converge.Child
	// vars are the forEach variables the child was made with.
	vars map[string]any
}

// Plan is what a graph makes of an instance.
type Plan struct {
	// Members are the children, dependencies before their dependents.
	Members []Member
	// Edges make dependents wait and carry the value flows.
	Edges []converge.Edge
}

// Children returns the plan's children.
func (p *Plan) Children() []converge.Child {
	out := make([]converge.Child, len(p.Members))
	for i, m := range p.Members {
		out[i] = m.Child
	}
	return out
}

// Compose evaluates the graph for an instance: the children (templates
// with everything known now filled in), and an edge with value flows for
// every value read from another resource. A resource whose includeWhen is
// false is left out, and so is every resource that reads it. Errors name
// the graph path and expression; they are the graph's or the instance's
// and do not go away on retry.
func (g *Graph) Compose(inst Instance) (*Plan, error) {
	base := g.bindings(inst)
	plan := &Plan{}
	nameOf := map[string]string{}
	for _, n := range g.nodes {
		present := true
		for _, d := range n.deps {
			if _, ok := nameOf[d]; !ok {
				present = false
			}
		}
		if !present {
			continue
		}
		combos, err := expand(n, base)
		if err != nil {
			return nil, err
		}
		for _, vars := range combos {
			m, edges, err := g.member(n, base, vars, nameOf)
			if err != nil {
				return nil, err
			}
			if m == nil {
				continue
			}
			plan.Members = append(plan.Members, *m)
			plan.Edges = append(plan.Edges, edges...)
			if !n.collection {
				nameOf[n.id] = m.Child.Name
			}
		}
	}
	return plan, nil
}

// bindings are the values every expression of an instance sees.
func (g *Graph) bindings(inst Instance) map[string]any {
	spec, _ := applyDefaults(g.specSchema, copyJSON(orEmptyMap(inst.Spec)), 0).(map[string]any)
	return map[string]any{"schema": map[string]any{
		"spec":     spec,
		"metadata": map[string]any{"name": inst.Name, "namespace": inst.Namespace},
	}}
}

// expand lists the forEach variable bindings of n: one empty binding
// without forEach, else every combination of the lists' items.
func expand(n *node, base map[string]any) ([]map[string]any, error) {
	combos := []map[string]any{{}}
	for _, it := range n.iters {
		v, err := evalJSON(it.list, base)
		if errors.Is(err, errNone) {
			v, err = []any{}, nil // optional.none(): no items
		}
		if err != nil {
			return nil, err
		}
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: ${%s} is not a list", it.list.path, it.list.src)
		}
		if len(combos)*len(items) > MaxForEachItems {
			return nil, fmt.Errorf("%s: forEach expands to %d children; the limit is %d (stdcel.MaxForEachItems)",
				n.path, len(combos)*len(items), MaxForEachItems)
		}
		next := make([]map[string]any, 0, len(combos)*len(items))
		for _, c := range combos {
			for _, item := range items {
				m := make(map[string]any, len(c)+1)
				for k, x := range c {
					m[k] = x
				}
				m[it.name] = item
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos, nil
}

// member makes one child of n with forEach variables vars; nil when its
// includeWhen is false.
func (g *Graph) member(n *node, base, vars map[string]any, nameOf map[string]string) (*Member, []converge.Edge, error) {
	act := make(map[string]any, len(base)+len(vars))
	for k, v := range base {
		act[k] = v
	}
	for k, v := range vars {
		act[k] = v
	}
	for _, e := range n.include {
		v, err := evalJSON(e, act)
		if errors.Is(err, errNone) {
			v, err = false, nil // optional.none(): not included
		}
		if err != nil {
			return nil, nil, err
		}
		if b, _ := v.(bool); !b {
			return nil, nil, nil
		}
	}
	name, err := evalString(n.name, act, n.path+".name")
	if err != nil {
		return nil, nil, err
	}
	labels := map[string]string{LabelResource: n.id}
	if inst, ok := base["schema"].(map[string]any)["metadata"].(map[string]any)["name"].(string); ok && inst != "" {
		labels[LabelInstance] = inst
	}
	for _, k := range n.labelKeys {
		if labels[k], err = evalString(n.labels[k], act, fieldPath(n.path+".template.labels", k)); err != nil {
			return nil, nil, err
		}
	}
	fc := &flowCollector{g: g, known: act}
	spec, _, err := fc.value(n.spec, "")
	if err != nil {
		return nil, nil, err
	}
	child := converge.Child{Kind: n.kind, KindVersion: n.version, Name: name, Labels: labels, Spec: spec}
	var edges []converge.Edge
	for _, dep := range sortedKeys(fc.flows) {
		flows := fc.flows[dep]
		if len(flows) > 32 {
			return nil, nil, fmt.Errorf("%s.template.spec: reads %d values of %q; at most 32 flow along one edge", n.path, len(flows), dep)
		}
		d := g.byID[dep]
		edges = append(edges, converge.DependsOn(child.Ref(), converge.RefTo(d.kind, nameOf[dep]), flows...))
	}
	return &Member{ID: n.id, Child: child, vars: vars}, edges, nil
}

// flowCollector evaluates a child's template, turning every value read
// from another resource into a flow.
type flowCollector struct {
	g     *Graph
	known map[string]any
	flows map[string][]converge.Flow
}

// value evaluates t at JSON pointer ptr of the child's spec; present is
// false for a value left out (an optional.none(), or a flowed field the
// schema does not require, written when its value flows in).
func (fc *flowCollector) value(t *tmpl, ptr string) (v any, present bool, err error) {
	switch t.kind {
	case tLiteral:
		return copyJSON(t.lit), true, nil
	case tObject:
		out := map[string]any{}
		for _, k := range t.keys {
			fv, ok, err := fc.value(t.fields[k], ptr+"/"+escapePointer(k))
			if err != nil {
				return nil, false, err
			}
			if ok {
				out[k] = fv
			}
		}
		return out, true, nil
	case tArray:
		out := make([]any, len(t.items))
		for i, it := range t.items {
			fv, _, err := fc.value(it, fmt.Sprintf("%s/%d", ptr, i))
			if err != nil {
				return nil, false, err
			}
			out[i] = fv
		}
		return out, true, nil
	case tExpr:
		if len(t.refs) == 0 {
			v, err := evalJSON(t.whole, fc.known)
			if errors.Is(err, errNone) {
				return nil, false, nil
			}
			return v, err == nil, err
		}
		src, err := fc.flowSource(t.whole, t.refs[0])
		if err != nil {
			return nil, false, err
		}
		return fc.flow(t, ptr, t.refs[0], gate(src, isOptional(t.whole.out), fc.readyConds(t.refs[0])), t.whole)
	case tInterp:
		if len(t.refs) == 0 {
			var b strings.Builder
			for _, p := range t.parts {
				if p.e == nil {
					b.WriteString(p.text)
					continue
				}
				s, err := evalToString(p.e, fc.known)
				if err != nil {
					return nil, false, err
				}
				b.WriteString(s)
			}
			return b.String(), true, nil
		}
		pieces := make([]string, 0, len(t.parts))
		var first *expr
		for _, p := range t.parts {
			if p.e == nil {
				pieces = append(pieces, celString(p.text))
				continue
			}
			if first == nil {
				first = p.e
			}
			src, err := fc.flowSource(p.e, t.refs[0])
			if err != nil {
				return nil, false, err
			}
			pieces = append(pieces, "string("+src+")")
		}
		return fc.flow(t, ptr, t.refs[0], gate(strings.Join(pieces, " + "), false, fc.readyConds(t.refs[0])), first)
	}
	return nil, false, nil
}

// flowSource is e rewritten for the server, reading dep as status/spec.
func (fc *flowCollector) flowSource(e *expr, dep string) (string, error) {
	src, err := translate(fc.g.parseEnv(), e.src, dep, fc.known)
	if err != nil {
		return "", fmt.Errorf("%s: ${%s}: %w", e.path, e.src, err)
	}
	return src, nil
}

// readyConds are dep's readyWhen conditions rewritten for the server.
func (fc *flowCollector) readyConds(dep string) []string {
	d := fc.g.byID[dep]
	var out []string
	for _, e := range d.ready {
		src, err := translate(fc.g.parseEnv(), e.src, dep, fc.known)
		if err != nil {
			// The condition cannot be rewritten: gate on a value that never
			// exists, and let the dependent's waiting message name it.
			src = "false"
		}
		out = append(out, src)
	}
	return out
}

// flow records a flow into ptr and returns the placeholder the child's
// spec holds until the value arrives.
func (fc *flowCollector) flow(t *tmpl, ptr, dep, src string, e *expr) (any, bool, error) {
	if len(src) > MaxExprLength {
		return nil, false, fmt.Errorf("%s: the flow expression is %d characters once the instance's values are filled in; the limit is %d",
			e.path, len(src), MaxExprLength)
	}
	if ptr == "" {
		return nil, false, fmt.Errorf("%s: a value cannot flow into the whole spec", e.path)
	}
	if fc.flows == nil {
		fc.flows = map[string][]converge.Flow{}
	}
	fc.flows[dep] = append(fc.flows[dep], converge.FlowExpr(src, ptr))
	if !t.required {
		return nil, false, nil
	}
	return placeholder(t.schema), true, nil
}

// placeholder is a value of the type schema s wants, which the child's
// spec holds until the flowed value replaces it: the schema's default, or
// the type's zero value.
func placeholder(s any) any {
	m, _ := s.(map[string]any)
	if m == nil {
		return nil
	}
	if d, ok := m["default"]; ok {
		return copyJSON(d)
	}
	switch celschema.Type(m) {
	case "string":
		return ""
	case "integer", "number":
		if min, ok := m["minimum"]; ok {
			return min
		}
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return nil
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// evalJSON evaluates e over act into decoded JSON.
func evalJSON(e *expr, act map[string]any) (any, error) {
	out, err := eval(e.prg, act)
	if err != nil {
		return nil, fmt.Errorf("%s: ${%s}: %w", e.path, e.src, err)
	}
	v, err := toJSON(out)
	if errors.Is(err, errNone) {
		return nil, errNone
	}
	if err != nil {
		return nil, fmt.Errorf("%s: ${%s}: %w", e.path, e.src, err)
	}
	return v, nil
}

func evalToString(e *expr, act map[string]any) (string, error) {
	out, err := eval(e.prg, act)
	if err != nil {
		return "", fmt.Errorf("%s: ${%s}: %w", e.path, e.src, err)
	}
	s, ok := out.ConvertToType(types.StringType).(types.String)
	if !ok {
		return "", fmt.Errorf("%s: ${%s} is %s, which cannot be written into a string", e.path, e.src, out.Type())
	}
	return string(s), nil
}

// evalString evaluates a name or label template.
func evalString(t *tmpl, act map[string]any, path string) (string, error) {
	fc := &flowCollector{known: act}
	v, _, err := fc.value(t, "")
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: the value is %s, not a string", path, literalType(v))
	}
	return s, nil
}

// applyDefaults fills in the defaults s declares for properties missing
// from v, as kro does for an instance's spec.
func applyDefaults(s any, v any, depth int) any {
	m, _ := s.(map[string]any)
	if m == nil || depth > maxDepth {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		for k, ps := range props {
			if _, ok := x[k]; !ok {
				if pm, _ := ps.(map[string]any); pm != nil {
					if d, ok := pm["default"]; ok {
						x[k] = copyJSON(d)
					}
				}
			}
			if cur, ok := x[k]; ok {
				x[k] = applyDefaults(ps, cur, depth+1)
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = applyDefaults(m["items"], x[i], depth+1)
		}
		return x
	}
	return v
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
