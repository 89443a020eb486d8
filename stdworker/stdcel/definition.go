package stdcel

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Definition is the spec of a std.graph resource: the instance kind it
// defines and the resources each instance is made of.
type Definition struct {
	// Kind and Version name the instance kind the graph defines.
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// Description is copied into the instance kind's manifest.
	Description string `json:"description,omitempty"`
	// SpecSchema is the instance kind's spec_schema (JSON Schema).
	SpecSchema map[string]any `json:"spec_schema,omitempty"`
	// SpecFields is the compact form of SpecSchema: field name to
	// "type | required | default=<json>"; nested objects are maps.
	SpecFields map[string]any `json:"spec_fields,omitempty"`
	// StatusSchema is the instance kind's status_schema; when absent it is
	// derived from the types of the Status projection.
	StatusSchema map[string]any `json:"status_schema,omitempty"`
	// Resources are the graph's nodes.
	Resources []Resource `json:"resources"`
	// Status projects expressions onto the instance's status: a JSON
	// object whose strings may hold `${...}` expressions.
	Status map[string]any `json:"status,omitempty"`
	// Recompose says what a change of the graph does to the instances
	// composed from the old one: RecomposeAll (the default) composes them
	// all again at once; RecomposeRollout leaves them to a staged rollout
	// (conctl rollout start KIND --recompose) or to their own next change.
	Recompose string `json:"recompose,omitempty"`
}

// What a graph change does to existing instances (Definition.Recompose).
const (
	RecomposeAll     = "all"
	RecomposeRollout = "rollout"
)

// Resource is one node of the graph: a template for one child (or, with
// ForEach, one child per item).
type Resource struct {
	// ID names the resource in expressions (db in ${db.status.host}).
	ID string `json:"id"`
	// Kind and Version are the child's kind version.
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// Name is the child's name template; default
	// "${schema.metadata.name}-<id>".
	Name string `json:"name,omitempty"`
	// Template is the child's spec and labels.
	Template Template `json:"template"`
	// IncludeWhen are boolean expressions over schema: the resource (and
	// everything that refers to it) exists only when all are true.
	IncludeWhen []string `json:"includeWhen,omitempty"`
	// ReadyWhen are boolean expressions over the resource itself: its
	// dependents and the instance wait until all are true.
	ReadyWhen []string `json:"readyWhen,omitempty"`
	// ForEach expands the resource once per combination of items: each
	// entry maps one variable name to a list expression.
	ForEach []map[string]string `json:"forEach,omitempty"`
}

// Template is the child a resource stands for: its spec and labels, whose
// strings may hold `${...}` expressions.
type Template struct {
	// Spec must match the child kind's spec_schema.
	Spec map[string]any `json:"spec,omitempty"`
	// Labels are added to the child's, next to LabelResource.
	Labels map[string]string `json:"labels,omitempty"`
}

// DecodeDefinition reads a graph spec strictly: an unknown field is an
// error naming it.
func DecodeDefinition(raw []byte) (*Definition, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var d Definition
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if d.Recompose != "" && d.Recompose != RecomposeAll && d.Recompose != RecomposeRollout {
		return nil, fmt.Errorf("spec.recompose: %q: must be %q or %q", d.Recompose, RecomposeAll, RecomposeRollout)
	}
	return &d, nil
}
