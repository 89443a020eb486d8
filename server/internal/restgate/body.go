package restgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// checkBody says what is wrong with a JSON body for message m, naming
// the field by its path in the body in proto (snake_case) names, the
// names docs and YAML use. It returns the body's top-level fields, by
// proto name, for a PATCH that derives its mask from them.
func checkBody(m protoreflect.MessageDescriptor, data []byte) ([]string, *Error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, badRequest("request body: not JSON: %s", jsonProblem(err))
	}
	if dec.More() {
		return nil, badRequest("request body: more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, badRequest("request body: want a JSON object (a %s), got %s", m.Name(), jsonType(v))
	}
	if why := walkMessage(m, obj, ""); why != "" {
		return nil, badRequest("request body: %s", why)
	}
	// The walk covers the types; protojson is the decoder the transcoder
	// uses, so anything else it refuses (a oneof set twice, a duplicate
	// key) is refused here too, in its words.
	if err := (protojson.UnmarshalOptions{}).Unmarshal(data, dynamicpb.NewMessage(m)); err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "): "); strings.HasPrefix(msg, "proto:") && i > 0 {
			msg = msg[i+3:]
		}
		return nil, badRequest("request body: %s", msg)
	}
	fields := make([]string, 0, len(obj))
	for k := range obj {
		fields = append(fields, string(fieldByName(m, k).Name()))
	}
	return fields, nil
}

func jsonProblem(err error) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%s at byte %d", syn.Error(), syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends early"
	}
	return err.Error()
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func walkMessage(m protoreflect.MessageDescriptor, obj map[string]any, path string) string {
	for k, v := range obj {
		f := fieldByName(m, k)
		if f == nil {
			return fmt.Sprintf("field %s: unknown field; %s has %s", join(path, printable(k)), m.Name(), fieldNames(m))
		}
		if why := walkField(f, v, join(path, string(f.Name()))); why != "" {
			return why
		}
	}
	return ""
}

func walkField(f protoreflect.FieldDescriptor, v any, path string) string {
	if v == nil {
		return ""
	}
	switch {
	case f.IsMap():
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Sprintf("field %s: want an object, got %s", path, jsonType(v))
		}
		for k, e := range obj {
			p := fmt.Sprintf("%s[%s]", path, strconv.Quote(k))
			if f.MapKey().Kind() != protoreflect.StringKind {
				if why := checkScalar(f.MapKey().Kind(), nil, k); why != "" {
					return fmt.Sprintf("field %s: key %s", p, why)
				}
			}
			if why := walkValue(f.MapValue(), e, p); why != "" {
				return why
			}
		}
		return ""
	case f.IsList():
		arr, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("field %s: want an array, got %s", path, jsonType(v))
		}
		for i, e := range arr {
			if why := walkValue(f, e, fmt.Sprintf("%s[%d]", path, i)); why != "" {
				return why
			}
		}
		return ""
	}
	return walkValue(f, v, path)
}

// walkValue checks one value (an element, for a list or map) of field f.
func walkValue(f protoreflect.FieldDescriptor, v any, path string) string {
	if v == nil {
		return ""
	}
	if m := f.Message(); m != nil {
		return walkMessageValue(m, v, path)
	}
	if why := checkJSONScalar(f.Kind(), f.Enum(), v); why != "" {
		return fmt.Sprintf("field %s: %s", path, why)
	}
	return ""
}

func walkMessageValue(m protoreflect.MessageDescriptor, v any, path string) string {
	want := func(what string) string {
		return fmt.Sprintf("field %s: want %s, got %s", path, what, jsonType(v))
	}
	switch m.FullName() {
	case "google.protobuf.Value":
		return ""
	case "google.protobuf.Struct", "google.protobuf.Empty", "google.protobuf.Any":
		if _, ok := v.(map[string]any); !ok {
			return want("an object")
		}
		return ""
	case "google.protobuf.ListValue":
		if _, ok := v.([]any); !ok {
			return want("an array")
		}
		return ""
	case "google.protobuf.Timestamp", "google.protobuf.Duration", "google.protobuf.FieldMask":
		s, ok := v.(string)
		if !ok {
			return want("a string")
		}
		if why := checkWellKnown(m, s); why != "" {
			return fmt.Sprintf("field %s: %s", path, why)
		}
		return ""
	}
	if hasTextForm(m) { // a wrapper: the JSON of the value it wraps
		return walkValue(m.Fields().ByName("value"), v, path)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return want("an object (a " + string(m.Name()) + ")")
	}
	return walkMessage(m, obj, path)
}

// checkJSONScalar checks a JSON value against a scalar kind as protojson
// reads it: 64-bit integers may be strings, integers may be written with
// an exponent when they are whole.
func checkJSONScalar(k protoreflect.Kind, enum protoreflect.EnumDescriptor, v any) string {
	switch k {
	case protoreflect.StringKind:
		if _, ok := v.(string); !ok {
			return "want a string, got " + jsonType(v)
		}
	case protoreflect.BoolKind:
		if _, ok := v.(bool); !ok {
			return "want true or false, got " + jsonType(v)
		}
	case protoreflect.BytesKind:
		s, ok := v.(string)
		if !ok {
			return "want a base64 string, got " + jsonType(v)
		}
		return checkScalar(k, nil, s)
	case protoreflect.EnumKind:
		switch x := v.(type) {
		case string:
			return checkScalar(k, enum, x)
		case json.Number:
			return checkScalar(k, enum, x.String())
		}
		return fmt.Sprintf("want one of %s, got %s", enumNames(enum), jsonType(v))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		switch x := v.(type) {
		case json.Number:
			if f, err := strconv.ParseFloat(x.String(), 64); err != nil || math.IsInf(f, 0) {
				return fmt.Sprintf("%s is out of range for a number", x)
			}
		case string:
			if x == "NaN" || x == "Infinity" || x == "-Infinity" {
				return ""
			}
			return checkScalar(k, nil, x)
		default:
			return "want a number, got " + jsonType(v)
		}
	default: // the integer kinds
		var s string
		switch x := v.(type) {
		case json.Number:
			s = x.String()
		case string:
			s = x
		default:
			return "want an integer, got " + jsonType(v)
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && strings.ContainsAny(s, ".eE") {
			s = strconv.FormatFloat(f, 'f', -1, 64)
		}
		return checkScalar(k, nil, s)
	}
	return ""
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "the number " + x.String()
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return "the string " + strconv.Quote(x)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// printable quotes a client-given name when it holds anything but
// letters, digits and _.-/+ so a message never carries control bytes.
func printable(s string) string {
	for _, r := range s {
		if !(strings.ContainsRune("_.-/+", r) || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return strconv.Quote(s)
		}
	}
	return s
}
