package schema

import (
	"sort"
	"strconv"
	"strings"
)

// Where subschemas live, mirroring the locations the underlying library
// compiles for draft 2020-12 (including the legacy keywords it still
// honours). The walk below visits exactly the places the library treats as
// schemas, so a keyword's location is reported at the path the user wrote.
var (
	schemaKeywords = []string{
		"not", "additionalProperties", "items", "additionalItems", "propertyNames",
		"contains", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems",
		"contentSchema",
	}
	schemaMapKeywords   = []string{"definitions", "$defs", "properties", "patternProperties", "dependencies", "dependentSchemas"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "items", "prefixItems"}
)

// reference is a "$ref" or "$dynamicRef" found in a schema document.
type reference struct {
	ptr     string // location of the keyword, e.g. /properties/a/$ref
	keyword string
	value   string
}

// dialect is a "$schema" declaration that the library would honour: at the
// root, or in an embedded resource that has an "$id".
type dialect struct {
	ptr   string
	value string
}

type walkResult struct {
	refs     []reference
	dialects []dialect
}

// walk collects references and dialect declarations of a normalized schema
// document.
func walk(doc any) walkResult {
	var w walkResult
	w.visit(doc, nil)
	sort.Slice(w.refs, func(i, j int) bool { return ComparePointers(w.refs[i].ptr, w.refs[j].ptr) < 0 })
	return w
}

func (w *walkResult) visit(v any, path []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	for _, kw := range []string{"$ref", "$dynamicRef"} {
		if s, ok := obj[kw].(string); ok {
			w.refs = append(w.refs, reference{ptr: JoinPointer("", child(path, kw)...), keyword: kw, value: s})
		}
	}
	if s, ok := obj["$schema"].(string); ok {
		id, _ := obj["$id"].(string)
		if len(path) == 0 || id != "" {
			w.dialects = append(w.dialects, dialect{ptr: JoinPointer("", child(path, "$schema")...), value: s})
		}
	}
	for _, kw := range schemaKeywords {
		if sub, ok := obj[kw]; ok {
			w.visit(sub, child(path, kw))
		}
	}
	for _, kw := range schemaMapKeywords {
		if m, ok := obj[kw].(map[string]any); ok {
			for name, sub := range m {
				w.visit(sub, child(child(path, kw), name))
			}
		}
	}
	for _, kw := range schemaArrayKeywords {
		if a, ok := obj[kw].([]any); ok {
			for i, sub := range a {
				w.visit(sub, child(child(path, kw), strconv.Itoa(i)))
			}
		}
	}
}

// is2020 reports whether a "$schema" value names draft 2020-12.
func is2020(s string) bool {
	s = strings.TrimSuffix(s, "#")
	if rest, ok := strings.CutPrefix(s, "https://"); ok {
		s = rest
	} else if rest, ok := strings.CutPrefix(s, "http://"); ok {
		s = rest
	}
	return s == "json-schema.org/draft/2020-12/schema"
}
