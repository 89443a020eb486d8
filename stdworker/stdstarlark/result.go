package stdstarlark

import (
	"encoding/json"
	"fmt"
	"slices"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/convergehq/converge/sdk-go/converge"
)

// resultKeys are the keys a compose result dict may have.
var resultKeys = []string{"children", "edges", "status", "references"}

// composeResult converts what compose(ctx) returned: a dict with children,
// edges, status and references (each optional), a list of children, or
// None (no children). Errors name the part of the result.
func composeResult(v starlark.Value, composes bool) (*converge.Result, error) {
	parts := map[string]starlark.Value{}
	switch v := v.(type) {
	case starlark.NoneType:
	case *starlark.List, starlark.Tuple:
		parts["children"] = v
	case *starlark.Dict:
		for _, item := range v.Items() {
			k, ok := item[0].(starlark.String)
			if !ok || !slices.Contains(resultKeys, string(k)) {
				return nil, fmt.Errorf("the result has key %s; want children, edges, status or references", item[0].String())
			}
			parts[string(k)] = item[1]
		}
	default:
		return nil, fmt.Errorf("the result is a %s; want a dict (children, edges, status, references) or a list of children", v.Type())
	}

	res := &converge.Result{Compose: composes}
	if s, ok := parts["status"]; ok {
		st, err := statusJSON(s)
		if err != nil {
			return nil, err
		}
		if st != nil {
			res.Status = st
		}
	}
	var err error
	if res.Children, err = children(parts["children"]); err != nil {
		return nil, err
	}
	if res.Edges, err = edges(parts["edges"]); err != nil {
		return nil, err
	}
	if res.References, err = references(parts["references"]); err != nil {
		return nil, err
	}
	if !composes && (len(res.Children) > 0 || len(res.Edges) > 0 || len(res.References) > 0) {
		return nil, fmt.Errorf("the result has %d children, %d edges and %d references, but the reaction does not emit children", len(res.Children), len(res.Edges), len(res.References))
	}
	return res, nil
}

// statusJSON converts a status: a dict, a struct or None.
func statusJSON(v starlark.Value) (json.RawMessage, error) {
	switch v.(type) {
	case starlark.NoneType:
		return nil, nil
	case *starlark.Dict, *starlarkstruct.Struct:
	default:
		return nil, fmt.Errorf("status is a %s; want a dict", v.Type())
	}
	raw, err := toJSON(v, "status")
	if err != nil {
		return nil, err
	}
	if len(raw) > maxSpecBytes {
		return nil, fmt.Errorf("output limit: status is %d bytes; a status holds at most %d", len(raw), maxSpecBytes)
	}
	return raw, nil
}

// elements returns the elements of a list or tuple named what (nil: none).
func elements(what string, v starlark.Value) ([]starlark.Value, error) {
	switch v := v.(type) {
	case nil, starlark.NoneType:
		return nil, nil
	case *starlark.List:
		out := make([]starlark.Value, v.Len())
		for i := range out {
			out[i] = v.Index(i)
		}
		return out, nil
	case starlark.Tuple:
		return v, nil
	}
	return nil, fmt.Errorf("%s is a %s; want a list", what, v.Type())
}

func children(v starlark.Value) ([]converge.Child, error) {
	elems, err := elements("children", v)
	if err != nil {
		return nil, err
	}
	if len(elems) > maxChildren {
		return nil, fmt.Errorf("output limit: %d children; at most %d", len(elems), maxChildren)
	}
	out := make([]converge.Child, len(elems))
	for i, e := range elems {
		c, ok := e.(*childValue)
		if !ok {
			return nil, fmt.Errorf("children[%d] is a %s; want a child (from child())", i, e.Type())
		}
		out[i] = converge.Child{Kind: c.kind, KindVersion: c.version, Name: c.name, Labels: c.labels, Spec: c.spec}
	}
	return out, nil
}

func edges(v starlark.Value) ([]converge.Edge, error) {
	elems, err := elements("edges", v)
	if err != nil {
		return nil, err
	}
	if len(elems) > maxEdges {
		return nil, fmt.Errorf("output limit: %d edges; at most %d", len(elems), maxEdges)
	}
	out := make([]converge.Edge, len(elems))
	for i, x := range elems {
		e, ok := x.(*edgeValue)
		if !ok {
			return nil, fmt.Errorf("edges[%d] is a %s; want an edge (from depends())", i, x.Type())
		}
		flows := make([]converge.Flow, len(e.flows))
		for j, f := range e.flows {
			flows[j] = converge.Flow{From: f.from, Expr: f.expr, To: f.to}
		}
		out[i] = converge.DependsOn(converge.RefTo(e.dependent.kind, e.dependent.name), refOf(e.dependency), flows...)
	}
	return out, nil
}

func references(v starlark.Value) ([]converge.Ref, error) {
	elems, err := elements("references", v)
	if err != nil {
		return nil, err
	}
	out := make([]converge.Ref, len(elems))
	for i, x := range elems {
		r, ok := x.(*refValue)
		if !ok {
			return nil, fmt.Errorf("references[%d] is a %s; want a ref (from ref())", i, x.Type())
		}
		out[i] = converge.Ref{Namespace: r.namespace, Kind: r.kind, Name: r.name}
	}
	return out, nil
}

// refOf returns the converge reference of a child or ref value.
func refOf(v starlark.Value) converge.Ref {
	switch v := v.(type) {
	case *childValue:
		return converge.RefTo(v.kind, v.name)
	case *refValue:
		return converge.Ref{Namespace: v.namespace, Kind: v.kind, Name: v.name}
	}
	return converge.Ref{}
}
