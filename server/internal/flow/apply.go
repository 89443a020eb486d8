package flow

import "github.com/convergehq/converge/server/internal/schema"

// Write is one flowed value and where it goes in the dependent's spec.
type Write struct {
	To    Pointer
	Value any
}

// Apply puts each value at its pointer, in order, into a copy of spec (see
// Pointer.Set; spec itself is never modified). It reports whether the
// result differs from spec as JSON, where numbers compare by value
// (1 == 1.0). When nothing changes it returns spec itself without
// copying anything, which is the common case when a dependency re-syncs
// with the same values. On error it returns spec, false and the error of the first
// write that cannot be made, which names its pointer.
func Apply(spec any, writes []Write) (any, bool, error) {
	out := spec
	touched := false
	for _, w := range writes {
		if old, ok := w.To.Get(out); ok && schema.EqualJSON(old, w.Value) {
			continue
		}
		next, err := w.To.Set(out, w.Value)
		if err != nil {
			return spec, false, err
		}
		out, touched = next, true
	}
	if !touched {
		return spec, false, nil
	}
	// Later writes may undo earlier ones (two flows to one pointer).
	if len(writes) > 1 && schema.EqualJSON(spec, out) {
		return spec, false, nil
	}
	return out, true, nil
}
