package main

// Translates JSON Schema (2020-12, as kind manifests use) into Go types. It
// never fails: a part Go cannot express becomes `any`, so a valid schema
// always yields a type that decodes every value the schema accepts.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

type schema = map[string]any

const maxDepth = 64

// shape is what a Go type is, for the choice of pointer and omitzero.
type shape int

const (
	scalarShape shape = iota // string, number, bool, or a named type of one
	structShape
	refShape // slice, map or any: nil already means absent
	// pending: a named type still being translated. A required field of
	// that type must be a pointer, or the type would contain itself.
	pending shape = -1
)

// goType is a translated schema.
type goType struct {
	expr     string
	shape    shape
	nullable bool // the schema accepts null as well
}

var anyType = goType{expr: "any", shape: refShape}

// translator translates the schemas of one manifest. Declarations are
// appended to decls; names is shared by the whole output file.
type translator struct {
	prefix string // e.g. "GreetingV1"
	names  names
	decls  *[]string
	root   any // the schema being translated, for "#/$defs/..." references
	// at is where in the value the schema being translated applies, e.g.
	// "spec.ports[].name", for doc comments.
	at string
	// refs maps a reference to its type, and shapes the shape of each named
	// type.
	refs   map[string]string
	shapes map[string]shape
	// own are names claimed for a declaration not made yet, with its doc:
	// the struct or enum translated under the name takes it.
	own map[string]string
}

// take names the struct or enum hint asks for: the name claimed for it,
// if any, else a new one.
func (tr *translator) take(hint string) (name, doc string) {
	if doc, ok := tr.own[hint]; ok {
		delete(tr.own, hint)
		return hint, doc
	}
	return tr.names.claim(hint), ""
}

// declare translates s as the type called name (Spec, Status, …), which
// the caller has claimed, so that name always exists.
func (tr *translator) declare(name, at, doc string, s any) {
	tr.root, tr.at = s, at
	tr.refs = map[string]string{}
	if s == nil {
		tr.emit(doc, fmt.Sprintf("type %s map[string]any", name))
		return
	}
	tr.declareAs(name, doc, s, func() goType { return tr.typeOf(s, name, 0) })
}

// declareAs declares the claimed name as the type translate returns for
// s, unless translate declared it itself (a struct, an enum).
func (tr *translator) declareAs(name, doc string, s any, translate func() goType) goType {
	tr.own[name] = doc
	tr.shapes[name] = pending
	t := translate()
	if tr.shapes[t.expr] == pending {
		t = anyType // a reference loop with no type in it
	}
	if _, unused := tr.own[name]; unused {
		delete(tr.own, name)
		op := " "
		if _, isNamed := tr.shapes[t.expr]; isNamed {
			op = " = "
		}
		tr.emit(joinDoc(doc, docOf(s)), "type "+name+op+t.expr)
	}
	tr.shapes[name] = t.shape
	return goType{expr: name, shape: t.shape, nullable: t.nullable}
}

// emit appends a declaration with its doc comment.
func (tr *translator) emit(doc, decl string) {
	*tr.decls = append(*tr.decls, comment(doc, "")+decl)
}

// reserve keeps the next place among the declarations, so a type comes
// before the types it uses; fill puts the declaration there.
func (tr *translator) reserve() (fill func(doc, decl string)) {
	i := len(*tr.decls)
	*tr.decls = append(*tr.decls, "")
	return func(doc, decl string) { (*tr.decls)[i] = comment(doc, "") + decl }
}

// under translates with at one step further in.
func (tr *translator) under(step string, translate func() goType) goType {
	saved := tr.at
	tr.at += step
	defer func() { tr.at = saved }()
	return translate()
}

// defaultDoc is the doc of a type translated under a name of its own, and
// not for the declaration the caller claimed it for.
func (tr *translator) defaultDoc(name, own string, o schema) string {
	if own != "" {
		return joinDoc(own, docOf(o))
	}
	return joinDoc(name+" is the value at "+tr.at+".", docOf(o))
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pathStep renders a property name as a step of a path: ".name", or
// "[\"a.b\"]" for one that is not an identifier.
func pathStep(k string) string {
	if identifier.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

// typeOf translates s; hint names a type it has to declare (a struct, an
// enum).
func (tr *translator) typeOf(s any, hint string, depth int) goType {
	o, ok := s.(schema)
	if !ok || depth > maxDepth {
		return anyType // true, false, or not a schema
	}
	if ref, ok := o["$ref"].(string); ok {
		if t, ok := tr.refType(ref, depth); ok {
			return t
		}
		return anyType
	}
	if v, ok := o["const"]; ok {
		return tr.enumType([]any{v}, hint, o)
	}
	if list, ok := o["enum"].([]any); ok {
		return tr.enumType(list, hint, o)
	}
	if list, ok := o["allOf"].([]any); ok && len(list) > 0 {
		return tr.allOfType(o, list, hint, depth)
	}
	if len(jsonTypes(o)) > 0 {
		// oneOf and anyOf beside a type only narrow it.
		return tr.shapeType(o, hint, depth)
	}
	for _, key := range []string{"oneOf", "anyOf"} {
		if list, ok := o[key].([]any); ok && len(list) > 0 {
			return tr.unionType(list, hint, depth)
		}
	}
	return anyType
}

// jsonTypes lists the JSON types a schema's "type" names, inferring object or
// array from the keywords when it names none.
func jsonTypes(o schema) []string {
	switch t := o["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	if _, ok := o["properties"]; ok {
		return []string{"object"}
	}
	if _, ok := o["additionalProperties"]; ok {
		return []string{"object"}
	}
	if _, ok := o["items"]; ok {
		return []string{"array"}
	}
	if _, ok := o["prefixItems"]; ok {
		return []string{"array"}
	}
	return nil
}

func (tr *translator) shapeType(o schema, hint string, depth int) goType {
	ts := jsonTypes(o)
	nullable := slices.Contains(ts, "null")
	ts = slices.DeleteFunc(slices.Clone(ts), func(t string) bool { return t == "null" })
	if len(ts) == 2 && slices.Contains(ts, "integer") && slices.Contains(ts, "number") {
		ts = []string{"number"}
	}
	if len(ts) != 1 {
		return goType{expr: "any", shape: refShape, nullable: nullable}
	}
	var t goType
	switch ts[0] {
	case "string":
		t = goType{expr: "string"}
	case "integer":
		t = goType{expr: "int64"}
	case "number":
		t = goType{expr: "float64"}
	case "boolean":
		t = goType{expr: "bool"}
	case "array":
		t = tr.arrayType(o, hint, depth)
	case "object":
		t = tr.objectType(o, hint, depth)
	default:
		t = anyType
	}
	t.nullable = t.nullable || nullable
	return t
}

func (tr *translator) arrayType(o schema, hint string, depth int) goType {
	if _, ok := o["prefixItems"]; ok {
		return goType{expr: "[]any", shape: refShape} // a tuple: no Go equivalent
	}
	items, ok := o["items"]
	if !ok {
		return goType{expr: "[]any", shape: refShape}
	}
	elem := tr.under("[]", func() goType { return tr.typeOf(items, hint+"Item", depth+1) })
	e := elem.expr
	if elem.nullable && elem.shape != refShape {
		e = "*" + e
	}
	return goType{expr: "[]" + e, shape: refShape}
}

func (tr *translator) objectType(o schema, hint string, depth int) goType {
	props, _ := o["properties"].(schema)
	extra, hasExtra := o["additionalProperties"]
	if len(props) == 0 && len(requiredOf(o)) == 0 {
		if extra == false {
			return goType{expr: "struct{}", shape: structShape}
		}
		if es, ok := extra.(schema); ok && hasExtra {
			v := tr.under(".*", func() goType { return tr.typeOf(es, hint+"Value", depth+1) })
			e := v.expr
			if v.nullable && v.shape != refShape {
				e = "*" + e
			}
			return goType{expr: "map[string]" + e, shape: refShape}
		}
		return goType{expr: "map[string]any", shape: refShape}
	}
	name, doc := tr.take(hint)
	tr.shapes[name] = pending
	fill := tr.reserve()
	var b strings.Builder
	b.WriteString("type " + name + " struct {\n")
	fields := names{}
	required := requiredOf(o)
	keys := make([]string, 0, len(props)+len(required))
	for k := range props {
		keys = append(keys, k)
	}
	for _, k := range required {
		if _, ok := props[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	for _, k := range keys {
		ps, declared := props[k]
		field := fields.claim(fieldName(k))
		t := anyType
		if declared {
			t = tr.under(pathStep(k), func() goType { return tr.typeOf(ps, name+field, depth+1) })
		}
		req := slices.Contains(required, k)
		expr := t.expr
		pointer := t.shape != refShape && (t.nullable || !req || tr.shapes[t.expr] == pending)
		if pointer {
			expr = "*" + expr
		}
		tag := k
		if !req {
			tag += ",omitzero"
		}
		b.WriteString(comment(docOf(ps), "\t"))
		fmt.Fprintf(&b, "\t%s %s `json:%s`\n", field, expr, strconv.Quote(tag))
	}
	b.WriteString("}")
	doc = tr.defaultDoc(name, doc, o)
	if _, ok := extra.(schema); ok {
		doc = joinDoc(doc, "The schema accepts other properties too; this type does not keep them.")
	}
	fill(doc, b.String())
	tr.shapes[name] = structShape
	return goType{expr: name, shape: structShape}
}

func requiredOf(o schema) []string {
	list, _ := o["required"].([]any)
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

var refPattern = regexp.MustCompile(`^#/(\$defs|definitions)/([^/]+)$`)

// refType names the type of a "#/$defs/x" (or "#/definitions/x")
// reference, declaring it once.
func (tr *translator) refType(ref string, depth int) (goType, bool) {
	m := refPattern.FindStringSubmatch(ref)
	if m == nil {
		return goType{}, false
	}
	if name, ok := tr.refs[ref]; ok {
		return tr.named(name), true
	}
	key := strings.NewReplacer("~1", "/", "~0", "~").Replace(m[2])
	var target any
	if root, ok := tr.root.(schema); ok {
		if defs, ok := root[m[1]].(schema); ok {
			target = defs[key]
		}
	}
	name := tr.names.claim(tr.prefix + pascal(key))
	tr.refs[ref] = name
	saved := tr.at
	tr.at = fmt.Sprintf("%s (definition %s)", tr.at, key)
	defer func() { tr.at = saved }()
	doc := fmt.Sprintf("%s is the schema's definition %s.", name, key)
	return tr.declareAs(name, doc, target, func() goType { return tr.typeOf(target, name, depth+1) }), true
}

// named is the goType of an already declared (or in progress) name.
func (tr *translator) named(name string) goType {
	return goType{expr: name, shape: tr.shapes[name]}
}
