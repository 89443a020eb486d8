package stdcel

import (
	"slices"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// typeSet gives CEL the object types a graph's schemas describe, so the
// checker knows `schema.spec.port` is an int and rejects
// `schema.spec.prot`. Values stay decoded JSON at run time: an object type
// is only a promise about a map's keys.
type typeSet struct {
	base    *types.Registry
	objects map[string]*objectType
}

type objectType struct {
	fields map[string]*types.Type
	names  []string
}

func newTypeSet() (*typeSet, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return &typeSet{base: reg, objects: map[string]*objectType{}}, nil
}

// object declares an object type with fields. Its name is the graph path
// it stands for, in braces ("{db.status}"): braces cannot appear in a
// qualified identifier, so no expression can name the type itself, and
// the name reads well in type errors.
func (ts *typeSet) object(path string, fields map[string]*types.Type) *types.Type {
	name := "{" + path + "}"
	o := &objectType{fields: fields}
	for k := range fields {
		o.names = append(o.names, k)
	}
	slices.Sort(o.names)
	ts.objects[name] = o
	return types.NewObjectType(name)
}

// fromSchema returns the CEL type of values a JSON Schema describes. Only
// what can be trusted is typed: integers, strings, booleans, arrays and
// objects with declared properties; numbers are dyn (a whole number
// arrives as a CEL int), and anything composed (anyOf, $ref, several
// types) is dyn, checked when it runs.
func (ts *typeSet) fromSchema(path string, s any) *types.Type {
	m, ok := s.(map[string]any)
	if !ok {
		return types.DynType
	}
	for _, k := range []string{"$ref", "$dynamicRef", "anyOf", "oneOf", "allOf", "not", "if"} {
		if _, has := m[k]; has {
			return types.DynType
		}
	}
	switch schemaType(m) {
	case "string":
		return types.StringType
	case "integer":
		return types.IntType
	case "boolean":
		return types.BoolType
	case "array":
		if items, ok := m["items"]; ok {
			return types.NewListType(ts.fromSchema(path+"[]", items))
		}
		return types.NewListType(types.DynType)
	case "object":
		props, _ := m["properties"].(map[string]any)
		_, closed, _ := fieldsOf(m)
		if len(props) > 0 && !closed {
			// Keys beyond the declared ones are allowed: a map, so
			// expressions may read them.
			return types.NewMapType(types.StringType, types.DynType)
		}
		if len(props) == 0 {
			if add, ok := m["additionalProperties"].(map[string]any); ok {
				return types.NewMapType(types.StringType, ts.fromSchema(path+"[]", add))
			}
			return types.NewMapType(types.StringType, types.DynType)
		}
		fields := map[string]*types.Type{}
		for k, v := range props {
			fields[k] = ts.fromSchema(path+"."+k, v)
		}
		return ts.object(path, fields)
	}
	return types.DynType
}

// schemaType is the one JSON type a schema allows ("" for none or
// several), null aside; properties without a type mean an object.
func schemaType(m map[string]any) string {
	ts := schemaTypes(m)
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

// schemaTypes lists the JSON types a schema's "type" allows; nil for any.
func schemaTypes(m map[string]any) []string {
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

// EnumValue implements types.Provider.
func (ts *typeSet) EnumValue(name string) ref.Val { return ts.base.EnumValue(name) }

// FindIdent implements types.Provider.
func (ts *typeSet) FindIdent(name string) (ref.Val, bool) { return ts.base.FindIdent(name) }

// FindStructType implements types.Provider.
func (ts *typeSet) FindStructType(name string) (*types.Type, bool) {
	if _, ok := ts.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return ts.base.FindStructType(name)
}

// FindStructFieldNames implements types.Provider.
func (ts *typeSet) FindStructFieldNames(name string) ([]string, bool) {
	if o, ok := ts.objects[name]; ok {
		return slices.Clone(o.names), true
	}
	return ts.base.FindStructFieldNames(name)
}

// FindStructFieldType implements types.Provider. The field has no getter,
// so the interpreter selects it from the map the value really is.
func (ts *typeSet) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if o, ok := ts.objects[name]; ok {
		t, ok := o.fields[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return ts.base.FindStructFieldType(name, field)
}

// NewValue implements types.Provider: graph object types cannot be
// constructed in an expression.
func (ts *typeSet) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if _, ok := ts.objects[name]; ok {
		return types.NewErr("%s cannot be constructed; build a map instead", name)
	}
	return ts.base.NewValue(name, fields)
}

// RegisterDescriptor lets CEL extensions register protobuf types.
func (ts *typeSet) RegisterDescriptor(fd protoreflect.FileDescriptor) error {
	return ts.base.RegisterDescriptor(fd)
}

// RegisterType lets CEL extensions register types.
func (ts *typeSet) RegisterType(t ...ref.Type) error {
	return ts.base.RegisterType(t...)
}
