package stdstarlark

import (
	"encoding/json"
	"fmt"

	"go.starlark.net/starlark"
)

// childValue is what child() returns: one child of the composite, its spec
// already converted to JSON (so changing the dict afterwards changes
// nothing).
type childValue struct {
	kind    string
	version int
	name    string
	labels  map[string]string
	spec    json.RawMessage
}

var (
	_ starlark.Value    = (*childValue)(nil)
	_ starlark.HasAttrs = (*childValue)(nil)
)

func (c *childValue) String() string {
	return fmt.Sprintf("child(%q, %q, version=%d)", c.kind, c.name, c.version)
}
func (c *childValue) Type() string          { return "child" }
func (c *childValue) Freeze()               {}
func (c *childValue) Truth() starlark.Bool  { return true }
func (c *childValue) Hash() (uint32, error) { return starlark.String(c.kind + "/" + c.name).Hash() }
func (c *childValue) AttrNames() []string   { return []string{"kind", "name", "version"} }
func (c *childValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "kind":
		return starlark.String(c.kind), nil
	case "name":
		return starlark.String(c.name), nil
	case "version":
		return starlark.MakeInt(c.version), nil
	}
	return nil, nil
}

// refValue is what ref() returns: a resource outside the composite, for
// depends() and the result's references.
type refValue struct {
	namespace, kind, name string
}

var (
	_ starlark.Value    = (*refValue)(nil)
	_ starlark.HasAttrs = (*refValue)(nil)
)

func (r *refValue) String() string {
	if r.namespace == "" {
		return fmt.Sprintf("ref(%q, %q)", r.kind, r.name)
	}
	return fmt.Sprintf("ref(%q, %q, namespace=%q)", r.kind, r.name, r.namespace)
}
func (r *refValue) Type() string          { return "ref" }
func (r *refValue) Freeze()               {}
func (r *refValue) Truth() starlark.Bool  { return true }
func (r *refValue) Hash() (uint32, error) { return starlark.String(r.String()).Hash() }
func (r *refValue) AttrNames() []string   { return []string{"kind", "name", "namespace"} }
func (r *refValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "kind":
		return starlark.String(r.kind), nil
	case "name":
		return starlark.String(r.name), nil
	case "namespace":
		return starlark.String(r.namespace), nil
	}
	return nil, nil
}

// flow is one value flow of an edge: from a pointer into the dependency's
// status (or a CEL expression over it) to a pointer into the dependent's
// spec.
type flow struct {
	from, expr, to string
}

// edgeValue is what depends() returns.
type edgeValue struct {
	dependent  *childValue
	dependency starlark.Value // *childValue or *refValue
	flows      []flow
}

var _ starlark.Value = (*edgeValue)(nil)

func (e *edgeValue) String() string {
	return fmt.Sprintf("depends(%s, %s)", e.dependent, e.dependency)
}
func (e *edgeValue) Type() string         { return "edge" }
func (e *edgeValue) Freeze()              {}
func (e *edgeValue) Truth() starlark.Bool { return true }
func (e *edgeValue) Hash() (uint32, error) {
	return 0, fmt.Errorf("unhashable type: edge")
}
