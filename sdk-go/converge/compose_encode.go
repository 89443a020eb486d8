package converge

import (
	"errors"
	"fmt"
	"maps"
	"unicode/utf8"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// encodeComposition checks a composer's answer and encodes it as one
// Composition holding every child, edge and reference; splitComposition
// then cuts it into parts the protocol accepts. An error names the first
// offending item, e.g. `children[3] "vpc-1": name: ...`.
func encodeComposition(res *Result) (*convergev1.Composition, error) {
	comp := &convergev1.Composition{
		Children:   make([]*convergev1.Child, 0, len(res.Children)),
		Edges:      make([]*convergev1.Edge, 0, len(res.Edges)),
		References: make([]*convergev1.ResourceRef, 0, len(res.References)),
	}
	// A desired set names each resource once; two entries for one resource
	// would leave the server to guess which one is meant.
	children := make(map[Ref]int, len(res.Children))
	for i, c := range res.Children {
		pc, err := encodeChild(c)
		if err != nil {
			return nil, fmt.Errorf("children[%d] %q: %w", i, c.Name, err)
		}
		if j, dup := children[c.Ref()]; dup {
			return nil, fmt.Errorf("children[%d] %q: duplicates children[%d] (same kind %q and name)", i, c.Name, j, c.Kind)
		}
		children[c.Ref()] = i
		comp.Children = append(comp.Children, pc)
	}
	edges := make(map[[2]Ref]int, len(res.Edges))
	for i, e := range res.Edges {
		pe, err := encodeEdge(e)
		if err != nil {
			return nil, fmt.Errorf("edges[%d] (%s → %s): %w", i, describeRef(e.Dependent), describeRef(e.Dependency), err)
		}
		pair := [2]Ref{e.Dependent, e.Dependency}
		if j, dup := edges[pair]; dup {
			return nil, fmt.Errorf("edges[%d] (%s → %s): same dependent and dependency as edges[%d]; put all flows between two resources in one edge",
				i, describeRef(e.Dependent), describeRef(e.Dependency), j)
		}
		edges[pair] = i
		comp.Edges = append(comp.Edges, pe)
	}
	for i, r := range res.References {
		if err := checkRef("reference", r); err != nil {
			return nil, fmt.Errorf("references[%d] (%s): %w", i, describeRef(r), err)
		}
		comp.References = append(comp.References, refMessage(r))
	}
	return comp, nil
}

func encodeChild(c Child) (*convergev1.Child, error) {
	if err := checkKind(c.Kind); err != nil {
		return nil, err
	}
	if err := checkKindVersion(c.KindVersion); err != nil {
		return nil, err
	}
	if err := checkName(c.Name); err != nil {
		return nil, err
	}
	if err := checkLabels(c.Labels); err != nil {
		return nil, err
	}
	spec, err := encodeObject(c.Spec, maxChildSpecBytes)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if spec == nil {
		spec = []byte("{}")
	}
	return &convergev1.Child{
		Kind:        c.Kind,
		KindVersion: int32(c.KindVersion),
		Name:        c.Name,
		// A copy: the message is encoded later, on the sender's goroutine,
		// and a map the handler shares with other code may change by then.
		Labels: maps.Clone(c.Labels),
		Spec:   spec,
	}, nil
}

func encodeEdge(e Edge) (*convergev1.Edge, error) {
	if e.Dependent.Namespace != "" {
		return nil, fmt.Errorf("dependent.namespace: %q: a dependent is a child of the composition, in its namespace; leave the namespace empty", e.Dependent.Namespace)
	}
	if err := checkRef("dependent", e.Dependent); err != nil {
		return nil, err
	}
	if err := checkRef("dependency", e.Dependency); err != nil {
		return nil, err
	}
	if e.Dependent == e.Dependency {
		return nil, errors.New("a resource cannot depend on itself")
	}
	if len(e.Flows) > maxFlowsPerEdge {
		return nil, fmt.Errorf("flows: %d flows, more than %d", len(e.Flows), maxFlowsPerEdge)
	}
	pe := &convergev1.Edge{Dependent: refMessage(e.Dependent), Dependency: refMessage(e.Dependency)}
	for i, f := range e.Flows {
		pf, err := encodeFlow(f)
		if err != nil {
			return nil, fmt.Errorf("flows[%d]%w", i, err)
		}
		pe.Flows = append(pe.Flows, pf)
	}
	return pe, nil
}

// encodeFlow's errors start with the field, as ".to: ...", for the
// caller's prefix.
func encodeFlow(f Flow) (*convergev1.Flow, error) {
	if err := checkPointer(f.To); err != nil {
		return nil, fmt.Errorf(".to: %w", err)
	}
	pf := &convergev1.Flow{To: f.To}
	switch {
	case f.From != "" && f.Expr != "":
		return nil, errors.New(": set From or Expr, not both")
	case f.From != "":
		if err := checkPointer(f.From); err != nil {
			return nil, fmt.Errorf(".from: %w", err)
		}
		pf.Source = &convergev1.Flow_From{From: f.From}
	case f.Expr != "":
		if !utf8.ValidString(f.Expr) {
			return nil, errors.New(".expr: not valid UTF-8")
		}
		if n := utf8.RuneCountInString(f.Expr); n > maxExprLen {
			return nil, fmt.Errorf(".expr: %d characters, more than %d", n, maxExprLen)
		}
		pf.Source = &convergev1.Flow_Expr{Expr: f.Expr}
	default:
		return nil, errors.New(": set From (a JSON pointer into the dependency's status) or Expr (a CEL expression)")
	}
	return pf, nil
}

func refMessage(r Ref) *convergev1.ResourceRef {
	return &convergev1.ResourceRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}
