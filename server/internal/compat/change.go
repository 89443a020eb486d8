package compat

import (
	"slices"
	"strings"

	"github.com/convergehq/converge/server/internal/schema"
)

// Change is one breaking difference between an old and a new schema: a
// place where a value the old schema accepted may be refused by the new
// one.
type Change struct {
	// Field names the manifest field the change is in, e.g.
	// "spec_schema" or "operations[restart].input_schema"; it is empty in
	// the results of Check.
	Field string
	// Path is where in the instance the change bites, as a JSON pointer
	// with "*" standing for every array item or map value, e.g.
	// "/ports/*/protocol". "" is the instance itself.
	Path string
	// Schema is where in the new schema the refusing keyword is, as a
	// JSON pointer into the document, e.g.
	// "/properties/ports/items/properties/protocol/enum".
	Schema string
	// Reason classifies the change.
	Reason Reason
	// Detail says what changed, e.g. `type was ["string","null"], now "string"`.
	Detail string
}

// String renders the change as one line:
//
//	spec_schema /ports/*/protocol: enum-restricted: enum was ["TCP","UDP"], now ["TCP"]
//
// A change to a reaction or an operation itself has no instance path:
//
//	reactions[teardown]: removed: reaction "teardown" was removed
func (c Change) String() string {
	var b strings.Builder
	b.WriteString(c.Field)
	if c.Field == "" || strings.HasSuffix(c.Field, "_schema") {
		if c.Field != "" {
			b.WriteByte(' ')
		}
		if c.Path == "" {
			b.WriteByte('/')
		}
		b.WriteString(c.Path)
	}
	b.WriteString(": ")
	b.WriteString(string(c.Reason))
	b.WriteString(": ")
	b.WriteString(c.Detail)
	return b.String()
}

// Reason classifies a breaking change.
type Reason string

// The classes of breaking change. Each constant's value is what users see.
const (
	// Removed: a property the old schema declared is no longer accepted
	// (it falls under additionalProperties: false or a narrower schema),
	// or a subschema became false. In manifests: a reaction or an
	// operation was removed.
	Removed Reason = "removed"
	// Retyped: "type" no longer admits a type the old schema admitted
	// (changed, or narrowed as in ["string","null"] → "string" or
	// "number" → "integer").
	Retyped Reason = "retyped"
	// Narrowed: a bound was tightened (minimum, maximum, exclusiveMinimum,
	// exclusiveMaximum, minLength, maxLength, minItems, maxItems,
	// minProperties, maxProperties), multipleOf changed so that old
	// values fail it, or "items": false now cuts arrays short.
	Narrowed Reason = "narrowed"
	// NewlyRequired: "required" or "dependentRequired" names a property
	// the old schema did not require.
	NewlyRequired Reason = "newly-required"
	// EnumRestricted: "enum" lost values or was added; "const" was added
	// or changed.
	EnumRestricted Reason = "enum-restricted"
	// PatternAdded: "pattern" was added or changed (a changed regex cannot
	// be proven to accept every string the old one did).
	PatternAdded Reason = "pattern-added"
	// FormatAdded: an asserted "format" was added or changed.
	FormatAdded Reason = "format-added"
	// AdditionalProperties: "additionalProperties" (or the
	// "unevaluatedProperties" standing for it) was tightened: from absent
	// or true to false or a schema, or from a schema to false.
	AdditionalProperties Reason = "additional-properties"
	// PatternProperties: "patternProperties" now constrains property names
	// the old schema left unconstrained.
	PatternProperties Reason = "pattern-properties"
	// PropertyNames: "propertyNames" was added or narrowed.
	PropertyNames Reason = "property-names"
	// UniqueItems: "uniqueItems": true was added.
	UniqueItems Reason = "unique-items"
	// Contains: "contains" was added or changed, or its minContains or
	// maxContains tightened.
	Contains Reason = "contains"
	// Unproven: the checker cannot prove the change compatible: anyOf,
	// oneOf, not, if/then/else, unevaluated* or dynamic references whose
	// structure does not match the old schema's, reference cycles, or
	// schemas beyond the checker's budget. The change may be compatible;
	// it is refused because the gate never lets a breaking change through.
	Unproven Reason = "unproven"
	// ReactionChanged: a reaction kept its name but changed its trigger or
	// verb, or stopped emitting something it emitted (manifests only).
	ReactionChanged Reason = "reaction-changed"
	// SecrecyChanged: a property became secret (writeOnly or
	// x-converge-secret) or stopped being one. Stored values were sealed
	// (or not) by the old schema, so secrecy changes only in a new
	// kind_version.
	SecrecyChanged Reason = "secrecy-changed"
)

// sortChanges orders changes by field, path (tokens compared one by one,
// array indexes numerically), reason, schema location and detail, and
// drops duplicates.
func sortChanges(cs []Change) []Change {
	slices.SortFunc(cs, func(a, b Change) int {
		if c := compareFields(a.Field, b.Field); c != 0 {
			return c
		}
		if c := schema.ComparePointers(a.Path, b.Path); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.Reason), string(b.Reason)); c != 0 {
			return c
		}
		if c := schema.ComparePointers(a.Schema, b.Schema); c != 0 {
			return c
		}
		return strings.Compare(a.Detail, b.Detail)
	})
	return slices.Compact(cs)
}

// fieldRank orders manifest fields as a manifest lists them.
func fieldRank(f string) int {
	for i, p := range []string{"spec_schema", "status_schema", "config_schema", "operations[", "reactions["} {
		if strings.HasPrefix(f, p) {
			return i
		}
	}
	return -1
}

func compareFields(a, b string) int {
	if c := fieldRank(a) - fieldRank(b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

// under prefixes relative changes with an instance token ("*" for every
// item or value).
func under(tok string, cs []Change) []Change {
	if len(cs) == 0 {
		return nil
	}
	if tok != "*" {
		tok = schema.EscapeToken(tok)
	}
	out := make([]Change, len(cs))
	for i, c := range cs {
		c.Path = "/" + tok + c.Path
		out[i] = c
	}
	return out
}
