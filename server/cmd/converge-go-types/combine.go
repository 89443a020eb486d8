package main

// The schema keywords that combine or list values: enum and const, oneOf
// and anyOf, allOf.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// enumType translates enum (and const): string values become a named type
// with a constant each; other values the type they share, or any.
func (tr *translator) enumType(values []any, hint string, o schema) goType {
	var strs []string
	nullable, kinds := false, map[string]bool{}
	for _, v := range values {
		switch x := v.(type) {
		case nil:
			nullable = true
		case string:
			kinds["string"] = true
			strs = append(strs, x)
		case float64:
			if x == math.Trunc(x) {
				kinds["integer"] = true
			} else {
				kinds["number"] = true
			}
		case bool:
			kinds["boolean"] = true
		default:
			kinds["other"] = true
		}
	}
	if kinds["integer"] && kinds["number"] {
		delete(kinds, "integer")
	}
	if len(kinds) != 1 {
		return goType{expr: "any", shape: refShape, nullable: nullable}
	}
	switch {
	case kinds["integer"]:
		return goType{expr: "int64", nullable: nullable}
	case kinds["number"]:
		return goType{expr: "float64", nullable: nullable}
	case kinds["boolean"]:
		return goType{expr: "bool", nullable: nullable}
	case kinds["other"]:
		return goType{expr: "any", shape: refShape, nullable: nullable}
	}
	name, doc := tr.take(hint)
	tr.shapes[name] = scalarShape
	fill := tr.reserve()
	var b strings.Builder
	b.WriteString("type " + name + " string\n\n")
	fmt.Fprintf(&b, "// The values of %s.\nconst (\n", name)
	slices.Sort(strs)
	for _, v := range slices.Compact(strs) {
		c := tr.names.claim(name + fieldName(v))
		fmt.Fprintf(&b, "\t%s %s = %s\n", c, name, strconv.Quote(v))
	}
	b.WriteString(")")
	fill(tr.defaultDoc(name, doc, o), b.String())
	return goType{expr: name, nullable: nullable}
}

// unionType translates oneOf and anyOf: a single branch's type (null
// branches make it nullable), the scalar type the branches share, or any.
func (tr *translator) unionType(list []any, hint string, depth int) goType {
	var rest []schema
	nullable := false
	for _, x := range list {
		xs, ok := x.(schema)
		switch {
		case !ok:
			return anyType
		case len(xs) == 1 && slices.Equal(jsonTypes(xs), []string{"null"}):
			nullable = true
		default:
			rest = append(rest, xs)
		}
	}
	if len(rest) == 1 {
		t := tr.typeOf(rest[0], hint, depth+1)
		t.nullable = t.nullable || nullable
		return t
	}
	// Several: only plain scalars of one type translate (translating
	// structs would declare types nothing uses).
	kind := ""
	for _, xs := range rest {
		ts := jsonTypes(xs)
		plain := len(ts) == 1 && ts[0] != "object" && ts[0] != "array"
		for _, k := range []string{"$ref", "enum", "const", "allOf", "anyOf", "oneOf"} {
			if _, ok := xs[k]; ok {
				plain = false
			}
		}
		switch {
		case !plain:
			return anyType
		case kind == "" || kind == ts[0]:
			kind = ts[0]
		case kind == "integer" && ts[0] == "number" || kind == "number" && ts[0] == "integer":
			kind = "number"
		default:
			return anyType
		}
	}
	t := tr.shapeType(schema{"type": kind}, hint, depth)
	t.nullable = t.nullable || nullable
	return t
}

// allOfType translates allOf: object branches (local references
// followed) and the schema's own properties merge into one struct;
// otherwise the schema's own type, or the one branch, or any.
func (tr *translator) allOfType(o schema, list []any, hint string, depth int) goType {
	props, required := schema{}, []any{}
	own := without(o, "allOf")
	objects := true
	for _, x := range append([]any{own}, list...) {
		xs, ok := tr.resolve(x).(schema)
		if !ok || len(xs) == 0 {
			objects = objects && ok
			continue
		}
		if r, ok := xs["required"].([]any); ok {
			required = append(required, r...)
		}
		if !slices.Equal(jsonTypes(xs), []string{"object"}) {
			if _, hasType := xs["type"]; hasType || xs["$ref"] != nil {
				objects = false
			}
			continue // constraints only (required, minProperties, …)
		}
		if p, ok := xs["properties"].(schema); ok {
			for k, v := range p {
				props[k] = v
			}
		}
	}
	if objects && len(props) > 0 {
		merged := schema{"type": "object", "properties": props, "required": required}
		if d, ok := o["description"]; ok {
			merged["description"] = d
		}
		return tr.objectType(merged, hint, depth)
	}
	if len(jsonTypes(own)) > 0 {
		return tr.shapeType(own, hint, depth)
	}
	if len(list) == 1 {
		return tr.typeOf(list[0], hint, depth+1)
	}
	return anyType
}

// resolve follows local references from s to the schema they name.
func (tr *translator) resolve(s any) any {
	for range 8 {
		o, ok := s.(schema)
		if !ok {
			return s
		}
		ref, ok := o["$ref"].(string)
		if !ok {
			return s
		}
		m := refPattern.FindStringSubmatch(ref)
		if m == nil {
			return nil
		}
		root, _ := tr.root.(schema)
		defs, _ := root[m[1]].(schema)
		if defs == nil {
			return nil
		}
		s = defs[strings.NewReplacer("~1", "/", "~0", "~").Replace(m[2])]
	}
	return nil
}

// without returns o without the keys given.
func without(o schema, drop ...string) schema {
	out := schema{}
	for k, v := range o {
		if !slices.Contains(drop, k) {
			out[k] = v
		}
	}
	return out
}
