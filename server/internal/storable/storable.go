// Package storable is the one rule for values PostgreSQL cannot store: a
// NUL character in a string (text and jsonb refuse U+0000) and a number
// that is not finite (jsonb has none). Requests are checked at the door
// and worker results before they are applied, so such a value is refused
// naming where it is instead of failing a statement.
package storable

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Message finds the first value in m that cannot be stored. It returns
// the value's path in proto field names (into JSON values by key and
// index) and what is wrong, or "" when every value can be stored.
func Message(m proto.Message) (path, why string) {
	if m == nil {
		return "", ""
	}
	return walk(m.ProtoReflect(), "")
}

func walk(m protoreflect.Message, path string) (string, string) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue":
		return walkJSON(m, path)
	}
	var p, w string
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := join(path, string(f.Name()))
		switch {
		case f.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
				at := fmt.Sprintf("%s[%s]", name, strconv.Quote(k.String()))
				if f.MapKey().Kind() == protoreflect.StringKind {
					if p, w = checkString(at+" (key)", k.String()); w != "" {
						return false
					}
				}
				p, w = walkValue(f.MapValue(), e, at)
				return w == ""
			})
		case f.IsList():
			l := v.List()
			for i := range l.Len() {
				if p, w = walkValue(f, l.Get(i), fmt.Sprintf("%s[%d]", name, i)); w != "" {
					break
				}
			}
		default:
			p, w = walkValue(f, v, name)
		}
		return w == ""
	})
	return p, w
}

func walkValue(f protoreflect.FieldDescriptor, v protoreflect.Value, path string) (string, string) {
	switch f.Kind() {
	case protoreflect.StringKind:
		return checkString(path, v.String())
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return walk(v.Message(), path)
	}
	return "", ""
}

// walkJSON walks the JSON value types by their JSON shape, so a path
// reads spec.a.b[0] rather than through their internal fields.
func walkJSON(m protoreflect.Message, path string) (string, string) {
	fields := m.Descriptor().Fields()
	switch m.Descriptor().FullName() {
	case "google.protobuf.Struct":
		var p, w string
		m.Get(fields.ByName("fields")).Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
			at := join(path, jsonKey(k.String()))
			if p, w = checkString(at+" (key)", k.String()); w != "" {
				return false
			}
			p, w = walkJSON(v.Message(), at)
			return w == ""
		})
		return p, w
	case "google.protobuf.ListValue":
		l := m.Get(fields.ByName("values")).List()
		for i := range l.Len() {
			if p, w := walkJSON(l.Get(i).Message(), fmt.Sprintf("%s[%d]", path, i)); w != "" {
				return p, w
			}
		}
		return "", ""
	}
	// google.protobuf.Value: one of its kinds is set.
	od := m.Descriptor().Oneofs().ByName("kind")
	f := m.WhichOneof(od)
	if f == nil {
		return "", ""
	}
	v := m.Get(f)
	switch f.Name() {
	case "string_value":
		return checkString(path, v.String())
	case "number_value":
		if n := v.Float(); math.IsNaN(n) || math.IsInf(n, 0) {
			return path, fmt.Sprintf("the number %v cannot be stored; JSON numbers are finite", n)
		}
	case "struct_value", "list_value":
		return walkJSON(v.Message(), path)
	}
	return "", ""
}

// Text says why s cannot be stored as text, or "" when it can.
func Text(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Sprintf("contains a NUL character (\\u0000) at byte %d, which cannot be stored", i)
	}
	return ""
}

func checkString(path, s string) (string, string) {
	if why := Text(s); why != "" {
		return path, why
	}
	return "", ""
}

// jsonKey writes a JSON object key into a path: bare when it reads as a
// name, quoted in brackets otherwise.
func jsonKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return "[" + strconv.Quote(k) + "]"
		}
	}
	if k == "" {
		return `[""]`
	}
	return k
}

func join(path, name string) string {
	if path == "" || strings.HasPrefix(name, "[") {
		return path + name
	}
	return path + "." + name
}

// JSON finds the first value of a decoded JSON document (as
// encoding/json or schema.Decode makes it) that cannot be stored, with
// its path from root.
func JSON(doc any, root string) (path, why string) {
	switch x := doc.(type) {
	case string:
		return checkString(root, x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return root, fmt.Sprintf("the number %v cannot be stored; JSON numbers are finite", x)
		}
	case map[string]any:
		for k, v := range x {
			at := join(root, jsonKey(k))
			if p, w := checkString(at+" (key)", k); w != "" {
				return p, w
			}
			if p, w := JSON(v, at); w != "" {
				return p, w
			}
		}
	case []any:
		for i, v := range x {
			if p, w := JSON(v, fmt.Sprintf("%s[%d]", root, i)); w != "" {
				return p, w
			}
		}
	}
	return "", ""
}
