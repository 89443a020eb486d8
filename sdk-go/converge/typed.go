package converge

import (
	"context"
	"fmt"
	"reflect"
)

// TypedTask is a [Task] whose spec has been decoded into a Spec. Every
// field and method of Task is promoted; the raw spec is t.Task.Spec.
type TypedTask[Spec any] struct {
	*Task
	// Spec is the resource's spec, decoded. It is Spec's zero value for a
	// task without a spec (a reactor's).
	Spec Spec
}

// TypedResult is a [Result] whose status is a Status. Its fields are
// Result's, with Status typed; see Result for what each means.
type TypedResult[Status any] struct {
	// Status becomes the resource's status; nil leaves it as it was. It
	// must encode to a JSON object.
	Status *Status
	// Unhealthy: the resource exists but is not healthy.
	Unhealthy bool
	// Conditions explain the resource's state.
	Conditions []Condition
	// Compose, Children, Edges and References are a composer's answer.
	Compose    bool
	Children   []Child
	Edges      []Edge
	References []Ref
	// Output is an operation's output.
	Output any
}

// StatusResult returns a result reporting status, the common answer of a
// leaf's reconcile:
//
//	return converge.StatusResult(GreetingV1Status{Message: "Hello, " + t.Spec.Name}), nil
func StatusResult[Status any](status Status) *TypedResult[Status] {
	return &TypedResult[Status]{Status: &status}
}

// untyped is the Result r stands for; nil for nil.
func (r *TypedResult[Status]) untyped() *Result {
	if r == nil {
		return nil
	}
	res := &Result{
		Unhealthy:  r.Unhealthy,
		Conditions: r.Conditions,
		Compose:    r.Compose,
		Children:   r.Children,
		Edges:      r.Edges,
		References: r.References,
		Output:     r.Output,
	}
	if r.Status != nil {
		res.Status = r.Status
	}
	return res
}

// TypedHandlerFunc runs one task with its spec decoded into a Spec, and
// reports a status of type Status. Its context and errors are a
// [HandlerFunc]'s.
type TypedHandlerFunc[Spec, Status any] func(ctx context.Context, t *TypedTask[Spec]) (*TypedResult[Status], error)

// Typed turns h into a [HandlerFunc], for [Worker.Handle] or for
// middleware that takes one; [Handle] is the short way to register it.
//
// The HandlerFunc decodes the task's spec into a Spec before it calls h,
// as encoding/json does. Spec properties the Go type does not declare are
// ignored rather than refused: a kind version may gain optional properties
// (an additive change, see docs/stability.md) after the worker was built,
// and the server has already validated the spec against the kind's
// spec_schema, which is where additionalProperties: false is enforced.
// A spec that does not fit Spec is a terminal failure (retrying the same
// spec cannot help) and h is not called; its message names the path of the
// offending value, e.g. "converge: decode spec into main.Spec:
// spec.replicas: want integer, got string" (the error wraps a
// [*DecodeError]).
//
// Typed(nil) is nil.
func Typed[Spec, Status any](h TypedHandlerFunc[Spec, Status]) HandlerFunc {
	if h == nil {
		return nil
	}
	return func(ctx context.Context, t *Task) (*Result, error) {
		tt := &TypedTask[Spec]{Task: t}
		if err := decodeJSON("spec", t.Spec, &tt.Spec); err != nil {
			return nil, Terminal(fmt.Errorf("converge: decode spec into %s: %w", reflect.TypeFor[Spec](), err))
		}
		res, err := h(ctx, tt)
		return res.untyped(), err
	}
}

// Handle registers the typed handler h for the reaction named reaction of
// version version of kind: it is w.Handle(kind, version, reaction,
// Typed(h), opts...), with the same rules (see [Worker.Handle] and
// [Typed]). The types are inferred from h:
//
//	converge.Handle(w, "greeting", 1, "reconcile",
//		func(ctx context.Context, t *converge.TypedTask[GreetingSpec]) (*converge.TypedResult[GreetingStatus], error) {
//			return converge.StatusResult(GreetingStatus{Message: "Hello, " + t.Spec.Name}), nil
//		})
//
// converge-go-types generates the Spec and Status types, and a Handle
// function per reaction, from kind manifests.
func Handle[Spec, Status any](w *Worker, kind string, version int, reaction string, h TypedHandlerFunc[Spec, Status], opts ...HandlerOption) {
	w.Handle(kind, version, reaction, Typed(h), opts...)
}

// ConfigAs decodes the task's effective provider config ([Task.Config])
// into a Config, as [Task.DecodeConfig] does: an empty config gives
// Config's zero value, keys the type does not declare are ignored. An
// error names the path of the offending value (it wraps a
// [*DecodeError]) and is transient: the retry after an operator fixes the
// config gets the fixed one, where a terminal failure would wait for a
// spec change.
func ConfigAs[Config any](t *Task) (Config, error) {
	var c Config
	if err := decodeJSON("config", t.Config, &c); err != nil {
		return c, fmt.Errorf("converge: decode config into %s: %w", reflect.TypeFor[Config](), err)
	}
	return c, nil
}
