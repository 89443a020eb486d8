// Package celschema types CEL expressions by JSON Schema: the object types
// a schema describes, and whether a CEL type fits where a schema applies.
// stdcel's graphs and the server's kind conversions check expressions with
// it, so both read a schema the same way.
package celschema

import (
	"slices"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Set gives CEL the object types schemas describe, so the checker knows
// `schema.spec.port` is an int and rejects `schema.spec.prot`. Values stay decoded JSON at run time: an object type
// is only a promise about a map's keys.
type Set struct {
	base    *types.Registry
	objects map[string]*objectType
}

type objectType struct {
	fields map[string]*types.Type
	names  []string
}

// New returns an empty set over CEL's standard types.
func New() (*Set, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return &Set{base: reg, objects: map[string]*objectType{}}, nil
}

// Object declares an object type with fields. Its name is the path it
// stands for, in braces ("{db.status}"): braces cannot appear in a
// qualified identifier, so no expression can name the type itself, and
// the name reads well in type errors.
func (ts *Set) Object(path string, fields map[string]*types.Type) *types.Type {
	name := "{" + path + "}"
	o := &objectType{fields: fields}
	for k := range fields {
		o.names = append(o.names, k)
	}
	slices.Sort(o.names)
	ts.objects[name] = o
	return types.NewObjectType(name)
}

// FromSchema returns the CEL type of values a JSON Schema describes. Only
// what can be trusted is typed: integers, strings, booleans, arrays and
// objects with declared properties; numbers are dyn (a whole number
// arrives as a CEL int), and anything composed (anyOf, $ref, several
// types) is dyn, checked when it runs.
func (ts *Set) FromSchema(path string, s any) *types.Type {
	m, ok := s.(map[string]any)
	if !ok {
		return types.DynType
	}
	for _, k := range []string{"$ref", "$dynamicRef", "anyOf", "oneOf", "allOf", "not", "if"} {
		if _, has := m[k]; has {
			return types.DynType
		}
	}
	switch Type(m) {
	case "string":
		return types.StringType
	case "integer":
		return types.IntType
	case "boolean":
		return types.BoolType
	case "array":
		if items, ok := m["items"]; ok {
			return types.NewListType(ts.FromSchema(path+"[]", items))
		}
		return types.NewListType(types.DynType)
	case "object":
		props, _ := m["properties"].(map[string]any)
		_, closed, _ := Fields(m)
		if len(props) > 0 && !closed {
			// Keys beyond the declared ones are allowed: a map, so
			// expressions may read them.
			return types.NewMapType(types.StringType, types.DynType)
		}
		if len(props) == 0 {
			if add, ok := m["additionalProperties"].(map[string]any); ok {
				return types.NewMapType(types.StringType, ts.FromSchema(path+"[]", add))
			}
			return types.NewMapType(types.StringType, types.DynType)
		}
		fields := map[string]*types.Type{}
		for k, v := range props {
			fields[k] = ts.FromSchema(path+"."+k, v)
		}
		return ts.Object(path, fields)
	}
	return types.DynType
}

// Type is the one JSON type a schema allows ("" for none or
// several), null aside; properties without a type mean an object.
func Type(m map[string]any) string {
	ts := Types(m)
	ts = slices.DeleteFunc(ts, func(t string) bool { return t == "null" })
	if len(ts) == 1 {
		return ts[0]
	}
	if len(ts) == 0 {
		if _, ok := m["properties"]; ok {
			return "object"
		}
	}
	return ""
}

// Types lists the JSON types a schema's "type" allows; nil for any.
func Types(m map[string]any) []string {
	switch t := m["type"].(type) {
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
	return nil
}

// Base is the registry of CEL's standard types the set extends.
func (ts *Set) Base() *types.Registry { return ts.base }

// FieldsOf returns the fields of an object type the set declared, nil for
// any other type.
func (ts *Set) FieldsOf(t *types.Type) map[string]*types.Type {
	if t.Kind() != types.StructKind {
		return nil
	}
	if o, ok := ts.objects[t.TypeName()]; ok {
		return o.fields
	}
	return nil
}

// EnumValue implements types.Provider.
func (ts *Set) EnumValue(name string) ref.Val { return ts.base.EnumValue(name) }

// FindIdent implements types.Provider.
func (ts *Set) FindIdent(name string) (ref.Val, bool) { return ts.base.FindIdent(name) }

// FindStructType implements types.Provider.
func (ts *Set) FindStructType(name string) (*types.Type, bool) {
	if _, ok := ts.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return ts.base.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (ts *Set) FindStructFieldNames(name string) ([]string, bool) {
	if o, ok := ts.objects[name]; ok {
		return slices.Clone(o.names), true
	}
	return ts.base.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider. The field has no getter,
// so the interpreter selects it from the map the value really is.
func (ts *Set) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if o, ok := ts.objects[name]; ok {
		t, ok := o.fields[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return ts.base.FindStructFieldType(name, field)
}

// NewValue implements types.Provider: declared object types cannot be
// constructed in an expression.
func (ts *Set) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := ts.objects[name]; ok {
		return types.NewErr("%s cannot be constructed; build a map instead", name)
	}
	return ts.base.NewValue(name, fields)
}

// RegisterDescriptor lets CEL extensions register protobuf types.
func (ts *Set) RegisterDescriptor(fd protoreflect.FileDescriptor) error {
	return ts.base.RegisterDescriptor(fd)
}

// RegisterType lets CEL extensions register types.
func (ts *Set) RegisterType(t ...ref.Type) error {
	return ts.base.RegisterType(t...)
}
