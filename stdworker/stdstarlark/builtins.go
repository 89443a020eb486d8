package stdstarlark

import (
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkjson"
	"go.starlark.net/starlarkstruct"
)

// Output limits: a compose's answer is bounded so that a runaway program
// fails with a clear message instead of exhausting the worker or the server.
const (
	// maxChildren is the server's limit on a composite's children.
	maxChildren = 100_000
	// maxEdges bounds the edges of one answer.
	maxEdges = 100000
	// maxSpecBytes is the server's limit on one spec (and one status).
	maxSpecBytes = 512 << 10
	// maxOutputBytes bounds the specs of all children together.
	maxOutputBytes = 64 << 20
)

// stateKey is the thread-local key of a run's *runState.
const stateKey = "converge.stdstarlark.run"

// runState is what the helpers count during one run.
type runState struct {
	children, edges, bytes int
}

// stateOf returns the run's state.
func stateOf(thread *starlark.Thread) *runState {
	if s, ok := thread.Local(stateKey).(*runState); ok {
		return s
	}
	s := &runState{}
	thread.SetLocal(stateKey, s)
	return s
}

// predeclared are the names every file of a bundle sees besides Starlark's
// own built-ins.
var predeclared = starlark.StringDict{
	"child":   starlark.NewBuiltin("child", builtinChild),
	"depends": starlark.NewBuiltin("depends", builtinDepends),
	"ref":     starlark.NewBuiltin("ref", builtinRef),
	"json":    starlarkjson.Module,
	"struct":  starlark.NewBuiltin("struct", starlarkstruct.Make),
}

func init() {
	for _, v := range predeclared {
		v.Freeze()
	}
}

// builtinChild implements child(kind, name, spec=None, version=1, labels=None).
func builtinChild(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var kind, name string
	var spec, labelsArg starlark.Value = starlark.None, starlark.None
	version := 1
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "kind", &kind, "name", &name, "spec?", &spec, "version?", &version, "labels?", &labelsArg); err != nil {
		return nil, err
	}
	if kind == "" || name == "" {
		return nil, errors.New("kind and name must not be empty")
	}
	if version < 1 || version > 32767 {
		return nil, fmt.Errorf("child %q: version %d is not between 1 and 32767", name, version)
	}
	c := &childValue{kind: kind, version: version, name: name}
	switch spec.(type) {
	case starlark.NoneType:
		c.spec = []byte("{}")
	case *starlark.Dict, *starlarkstruct.Struct:
		raw, err := toJSON(spec, fmt.Sprintf("child %q spec", name))
		if err != nil {
			return nil, err
		}
		c.spec = raw
	default:
		return nil, fmt.Errorf("child %q: spec is a %s; want a dict", name, spec.Type())
	}
	if len(c.spec) > maxSpecBytes {
		return nil, fmt.Errorf("output limit: child %q spec is %d bytes; a spec holds at most %d", name, len(c.spec), maxSpecBytes)
	}
	labels, err := optionalDict("labels", labelsArg)
	if err != nil {
		return nil, fmt.Errorf("child %q: %w", name, err)
	}
	if labels != nil {
		c.labels = make(map[string]string, labels.Len())
		for _, item := range labels.Items() {
			k, ok1 := item[0].(starlark.String)
			v, ok2 := item[1].(starlark.String)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("child %q: labels must map strings to strings, got %s: %s", name, item[0].Type(), item[1].Type())
			}
			c.labels[string(k)] = string(v)
		}
	}
	st := stateOf(thread)
	st.children++
	st.bytes += len(c.spec)
	if st.children > maxChildren {
		return nil, fmt.Errorf("output limit: more than %d children", maxChildren)
	}
	if st.bytes > maxOutputBytes {
		return nil, fmt.Errorf("output limit: the children's specs exceed %d bytes", maxOutputBytes)
	}
	return c, nil
}

// builtinRef implements ref(kind, name, namespace="").
func builtinRef(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	r := &refValue{}
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "kind", &r.kind, "name", &r.name, "namespace?", &r.namespace); err != nil {
		return nil, err
	}
	if r.kind == "" || r.name == "" {
		return nil, errors.New("kind and name must not be empty")
	}
	return r, nil
}

// builtinDepends implements depends(dependent, dependency, flows=None,
// exprs=None): flows maps "/status/<pointer>" of the dependency to
// "/spec/<pointer>" of the dependent; exprs maps "/spec/<pointer>" of the
// dependent to a CEL expression over the dependency's status and spec.
func builtinDepends(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var dependent, dependency starlark.Value
	var flowsArg, exprsArg starlark.Value = starlark.None, starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "dependent", &dependent, "dependency", &dependency, "flows?", &flowsArg, "exprs?", &exprsArg); err != nil {
		return nil, err
	}
	flows, err := optionalDict("flows", flowsArg)
	if err != nil {
		return nil, err
	}
	exprs, err := optionalDict("exprs", exprsArg)
	if err != nil {
		return nil, err
	}
	e := &edgeValue{}
	var ok bool
	if e.dependent, ok = dependent.(*childValue); !ok {
		return nil, fmt.Errorf("dependent is a %s; want a child (from child())", dependent.Type())
	}
	switch dependency.(type) {
	case *childValue, *refValue:
		e.dependency = dependency
	default:
		return nil, fmt.Errorf("dependency is a %s; want a child (from child()) or a ref (from ref())", dependency.Type())
	}
	if flows != nil {
		for _, item := range flows.Items() {
			from, to, err := stringPair("flows", item)
			if err != nil {
				return nil, err
			}
			fromPtr, ok := strings.CutPrefix(from, "/status")
			if !ok || !strings.HasPrefix(fromPtr, "/") {
				return nil, fmt.Errorf("flows key %q: want a pointer into the dependency's status, e.g. \"/status/id\"", from)
			}
			toPtr, err := specPointer("flows", to)
			if err != nil {
				return nil, err
			}
			e.flows = append(e.flows, flow{from: fromPtr, to: toPtr})
		}
	}
	if exprs != nil {
		for _, item := range exprs.Items() {
			to, expr, err := stringPair("exprs", item)
			if err != nil {
				return nil, err
			}
			toPtr, err := specPointer("exprs", to)
			if err != nil {
				return nil, err
			}
			if expr == "" {
				return nil, fmt.Errorf("exprs[%q]: empty CEL expression", to)
			}
			e.flows = append(e.flows, flow{expr: expr, to: toPtr})
		}
	}
	st := stateOf(thread)
	if st.edges++; st.edges > maxEdges {
		return nil, fmt.Errorf("output limit: more than %d edges", maxEdges)
	}
	return e, nil
}

// optionalDict returns an optional dict argument: nil for None.
func optionalDict(arg string, v starlark.Value) (*starlark.Dict, error) {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case *starlark.Dict:
		return v, nil
	}
	return nil, fmt.Errorf("%s is a %s; want a dict", arg, v.Type())
}

// stringPair unpacks a dict item whose key and value must be strings.
func stringPair(arg string, item starlark.Tuple) (string, string, error) {
	k, ok1 := item[0].(starlark.String)
	v, ok2 := item[1].(starlark.String)
	if !ok1 || !ok2 {
		return "", "", fmt.Errorf("%s must map strings to strings, got %s: %s", arg, item[0].Type(), item[1].Type())
	}
	return string(k), string(v), nil
}

// specPointer turns "/spec/x" into the pointer "/x" into a dependent's spec.
func specPointer(arg, p string) (string, error) {
	ptr, ok := strings.CutPrefix(p, "/spec")
	if !ok || !strings.HasPrefix(ptr, "/") {
		return "", fmt.Errorf("%s: %q: want a pointer into the dependent's spec, e.g. \"/spec/id\"", arg, p)
	}
	return ptr, nil
}
