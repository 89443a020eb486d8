package compat

import (
	"strconv"

	"github.com/convergehq/converge/server/internal/schema"
)

// node is one subschema: a value (bool or object) at a pointer in a
// document. Synthetic nodes (doc nil) stand for facts the checker adds
// itself, such as "the instance is an object".
type node struct {
	doc *document
	ptr string
	v   any
	// neg marks a node of an old conjunction that the value does NOT
	// match (the "else" side of a split if/then/else).
	neg bool
	// noSplit marks an atom whose anyOf, oneOf and if/then/else have
	// already been split into cases.
	noSplit bool
	// types, on a synthetic node, restricts the instance's type.
	types typeSet
}

// typeNode is a synthetic node that admits only the given types.
func typeNode(t typeSet) node {
	return node{ptr: "types:" + strconv.Itoa(int(t)), v: map[string]any{}, types: t}
}

// key identifies a node for memo tables.
func (n node) key() string {
	var b []byte
	if n.doc == nil {
		b = append(b, 's')
	} else {
		b = append(b, n.doc.tag...)
	}
	if n.neg {
		b = append(b, '!')
	}
	if n.noSplit {
		b = append(b, '=')
	}
	b = append(b, ':')
	b = append(b, n.ptr...)
	return string(b)
}

// m returns the node's keywords, or nil for a boolean schema.
func (n node) m() map[string]any {
	m, _ := n.v.(map[string]any)
	return m
}

// child returns the subschema at the given keyword path, e.g.
// child("properties", "name").
func (n node) child(tokens ...string) (node, bool) {
	v := n.v
	for _, t := range tokens {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[t]; !ok {
				return node{}, false
			}
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(x) {
				return node{}, false
			}
			v = x[i]
		default:
			return node{}, false
		}
	}
	switch v.(type) {
	case bool, map[string]any:
		return node{doc: n.doc, ptr: schema.JoinPointer(n.ptr, tokens...), v: v}, true
	}
	return node{}, false
}

// at is the pointer of a keyword of this node, for findings.
func (n node) at(tokens ...string) string {
	return schema.JoinPointer(n.ptr, tokens...)
}

// isFalse reports whether the node is the schema false.
func (n node) isFalse() bool {
	b, ok := n.v.(bool)
	return ok && !b
}

// trivial reports whether the node accepts every value on its face: true,
// or an object with no keyword that asserts anything.
func (n node) trivial() bool {
	if n.types != 0 && n.types != tAll {
		return false
	}
	switch v := n.v.(type) {
	case bool:
		return v
	case map[string]any:
		for k := range v {
			if asserts(k) {
				return false
			}
		}
		return true
	}
	return false
}

// assertingKeywords are the keywords that can make a value invalid; every
// other keyword is an annotation (or unknown) and never does.
var assertingKeywords = map[string]bool{
	"$ref": true, "$dynamicRef": true, "$recursiveRef": true,
	"allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"dependentSchemas": true, "dependencies": true, "prefixItems": true, "items": true, "contains": true,
	"properties": true, "patternProperties": true, "additionalProperties": true, "propertyNames": true,
	"unevaluatedItems": true, "unevaluatedProperties": true,
	"type": true, "enum": true, "const": true, "multipleOf": true, "maximum": true, "exclusiveMaximum": true,
	"minimum": true, "exclusiveMinimum": true, "maxLength": true, "minLength": true, "pattern": true,
	"maxItems": true, "minItems": true, "uniqueItems": true, "maxContains": true, "minContains": true,
	"maxProperties": true, "minProperties": true, "required": true, "dependentRequired": true, "format": true,
}

func asserts(kw string) bool { return assertingKeywords[kw] }

// inPlaceKeywords are the applicators that evaluate the same instance and
// so feed "unevaluatedProperties" and "unevaluatedItems".
var inPlaceKeywords = []string{
	"$ref", "$dynamicRef", "$recursiveRef", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
	"dependentSchemas", "dependencies",
}

func hasInPlace(m map[string]any) bool {
	for _, k := range inPlaceKeywords {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// additional returns the keyword that governs properties not named by
// "properties" or "patternProperties": "additionalProperties", or
// "unevaluatedProperties" where it means the same (no in-place applicator
// beside it). ok is false when neither applies.
func additional(n node) (node, string, bool) {
	m := n.m()
	if c, ok := n.child("additionalProperties"); ok {
		return c, "additionalProperties", true
	}
	if _, ok := m["unevaluatedProperties"]; ok && !hasInPlace(m) {
		c, ok := n.child("unevaluatedProperties")
		return c, "unevaluatedProperties", ok
	}
	return node{}, "", false
}

// rest returns the keyword that governs array items after "prefixItems":
// "items", or "unevaluatedItems" where it means the same.
func rest(n node) (node, string, bool) {
	m := n.m()
	if c, ok := n.child("items"); ok {
		return c, "items", true
	}
	if _, ok := m["unevaluatedItems"]; ok && !hasInPlace(m) && m["contains"] == nil {
		c, ok := n.child("unevaluatedItems")
		return c, "unevaluatedItems", ok
	}
	return node{}, "", false
}

// prefixLen is the number of "prefixItems" of a node.
func prefixLen(n node) int {
	a, _ := n.m()["prefixItems"].([]any)
	return len(a)
}
