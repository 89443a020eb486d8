package compat

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/convergehq/converge/server/internal/schema"
)

// baseURI names a document the way package schema names it for the
// underlying validator, so "$id" and "$ref" resolve to the same targets.
const baseURI = "converge:///schema.json"

// document is one schema document with its resources and anchors indexed,
// so references resolve without the validator.
type document struct {
	root any
	// tag tells the old document from the new one in memo keys.
	tag string
	// bases maps the pointer of every resource root (the document root
	// and each subschema with "$id") to its absolute URI.
	bases map[string]string
	// resources maps an absolute URI (without fragment) to its pointer.
	resources map[string]string
	// anchors maps "URI#name" to the pointer of the subschema that
	// declares "$anchor" or "$dynamicAnchor" name.
	anchors map[string]string
	// dynamic counts the subschemas declaring each "$dynamicAnchor".
	dynamic map[string]int
}

// Where subschemas live: the keywords whose values (or whose values'
// entries) the validator compiles as schemas.
var (
	schemaKeywords = []string{
		"not", "additionalProperties", "items", "propertyNames", "contains",
		"if", "then", "else", "unevaluatedProperties", "unevaluatedItems", "contentSchema",
	}
	schemaMapKeywords   = []string{"$defs", "definitions", "properties", "patternProperties", "dependentSchemas", "dependencies"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

func newDocument(root any, tag string) *document {
	d := &document{
		root:      root,
		tag:       tag,
		bases:     map[string]string{},
		resources: map[string]string{baseURI: ""},
		anchors:   map[string]string{},
		dynamic:   map[string]int{},
	}
	d.bases[""] = baseURI
	d.index(root, "", baseURI)
	return d
}

func (d *document) index(v any, ptr, base string) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	if id, ok := m["$id"].(string); ok {
		if abs, ok := resolveURI(base, id); ok {
			base = stripFragment(abs)
			d.bases[ptr] = base
			d.resources[base] = ptr
		}
	}
	if a, ok := m["$anchor"].(string); ok {
		d.anchors[base+"#"+a] = ptr
	}
	if a, ok := m["$dynamicAnchor"].(string); ok {
		d.anchors[base+"#"+a] = ptr
		d.dynamic[a]++
	}
	for _, kw := range schemaKeywords {
		if sub, ok := m[kw]; ok {
			d.index(sub, schema.JoinPointer(ptr, kw), base)
		}
	}
	for _, kw := range schemaMapKeywords {
		if sm, ok := m[kw].(map[string]any); ok {
			for name, sub := range sm {
				d.index(sub, schema.JoinPointer(ptr, kw, name), base)
			}
		}
	}
	for _, kw := range schemaArrayKeywords {
		if arr, ok := m[kw].([]any); ok {
			for i, sub := range arr {
				d.index(sub, schema.JoinPointer(ptr, kw, strconv.Itoa(i)), base)
			}
		}
	}
}

// baseOf is the absolute URI of the resource that contains ptr.
func (d *document) baseOf(ptr string) string {
	for {
		if b, ok := d.bases[ptr]; ok {
			return b
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return baseURI
		}
		ptr = ptr[:i]
	}
}

// resolve finds the target of a "$ref" written in the subschema at from.
func (d *document) resolve(from, ref string) (node, bool) {
	abs, ok := resolveURI(d.baseOf(from), ref)
	if !ok {
		return node{}, false
	}
	uri, frag, _ := strings.Cut(abs, "#")
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return node{}, false
	}
	res, ok := d.resources[uri]
	if !ok {
		return node{}, false
	}
	var ptr string
	switch {
	case frag == "":
		ptr = res
	case frag[0] == '/':
		ptr = res + frag
	default:
		if ptr, ok = d.anchors[uri+"#"+frag]; !ok {
			return node{}, false
		}
	}
	v, ok := schema.ValueAt(d.root, ptr)
	if !ok {
		return node{}, false
	}
	return node{doc: d, ptr: ptr, v: v}, true
}

// resolveStatic resolves the dynamic references of a subschema when their
// target does not depend on how evaluation reached it: a "$dynamicRef"
// whose anchor is declared by at most one "$dynamicAnchor" in the whole
// document, or a "$recursiveRef" in a document with a single resource. ok
// is false when the subschema has a dynamic reference that cannot be
// resolved so.
func (d *document) resolveStatic(n node) (targets []node, ok bool) {
	m := n.m()
	if ref, has := m["$dynamicRef"].(string); has {
		_, frag, _ := strings.Cut(ref, "#")
		if frag != "" && frag[0] != '/' && d.dynamic[frag] > 1 {
			return nil, false
		}
		t, found := d.resolve(n.ptr, ref)
		if !found {
			return nil, false
		}
		targets = append(targets, t)
	}
	if ref, has := m["$recursiveRef"].(string); has {
		for _, ptr := range d.resources {
			if ptr != "" {
				return nil, false
			}
		}
		t, found := d.resolve(n.ptr, ref)
		if !found {
			return nil, false
		}
		targets = append(targets, t)
	}
	return targets, true
}

func resolveURI(base, ref string) (string, bool) {
	b, err := url.Parse(base)
	if err != nil {
		return "", false
	}
	r, err := url.Parse(ref)
	if err != nil {
		return "", false
	}
	return b.ResolveReference(r).String(), true
}

func stripFragment(uri string) string {
	u, _, _ := strings.Cut(uri, "#")
	return u
}
