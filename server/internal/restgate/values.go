package restgate

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/convergehq/converge/server/internal/storable"
)

// checkValue says what is wrong with s as the text form (in a path or a
// query string) of a value of field f, or "" when it parses. It accepts
// what the transcoder accepts, so a value that passes here decodes there.
func checkValue(f protoreflect.FieldDescriptor, s string) string {
	if f.Message() != nil {
		return checkWellKnown(f.Message(), s)
	}
	return checkScalar(f.Kind(), f.Enum(), s)
}

func checkScalar(k protoreflect.Kind, enum protoreflect.EnumDescriptor, s string) string {
	switch k {
	case protoreflect.StringKind:
		if !utf8.ValidString(s) {
			return "not valid UTF-8 once percent-decoded"
		}
		return storable.Text(s)
	case protoreflect.BoolKind:
		if s != "true" && s != "false" {
			return fmt.Sprintf("%q is not true or false", s)
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return checkInt(s, 32)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return checkInt(s, 64)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return checkUint(s, 32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return checkUint(s, 64)
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Sprintf("%q is not a finite number", s)
		}
	case protoreflect.EnumKind:
		if enum == nil || enum.Values().ByName(protoreflect.Name(s)) != nil {
			return ""
		}
		if n, err := strconv.ParseInt(s, 10, 32); err == nil && enum.Values().ByNumber(protoreflect.EnumNumber(n)) != nil {
			return ""
		}
		return fmt.Sprintf("%q is not one of %s", s, enumNames(enum))
	case protoreflect.BytesKind:
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			if _, err := base64.URLEncoding.DecodeString(s); err != nil {
				return fmt.Sprintf("%q is not base64", s)
			}
		}
	default:
		return fmt.Sprintf("a %s cannot be given as text", k)
	}
	return ""
}

func checkInt(s string, bits int) string {
	if _, err := strconv.ParseInt(s, 10, bits); err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return fmt.Sprintf("%s is out of range for a %d-bit integer", s, bits)
		}
		return fmt.Sprintf("%q is not an integer", s)
	}
	return ""
}

func checkUint(s string, bits int) string {
	if _, err := strconv.ParseUint(s, 10, bits); err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return fmt.Sprintf("%s is out of range for an unsigned %d-bit integer", s, bits)
		}
		return fmt.Sprintf("%q is not a non-negative integer", s)
	}
	return ""
}

// textForms are the message types a path or query may give as text.
var textForms = map[protoreflect.FullName]bool{
	"google.protobuf.Timestamp": true, "google.protobuf.Duration": true, "google.protobuf.FieldMask": true,
	"google.protobuf.StringValue": true, "google.protobuf.BoolValue": true,
	"google.protobuf.Int32Value": true, "google.protobuf.Int64Value": true,
	"google.protobuf.UInt32Value": true, "google.protobuf.UInt64Value": true,
	"google.protobuf.FloatValue": true, "google.protobuf.DoubleValue": true,
}

func hasTextForm(m protoreflect.MessageDescriptor) bool { return textForms[m.FullName()] }

// checkWellKnown checks the text form of the types in textForms.
func checkWellKnown(m protoreflect.MessageDescriptor, s string) string {
	switch m.FullName() {
	case "google.protobuf.Timestamp":
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Sprintf("%q is not an RFC 3339 time (like 2026-01-02T15:04:05Z)", s)
		}
	case "google.protobuf.Duration":
		if !strings.HasSuffix(s, "s") {
			return fmt.Sprintf("%q is not a duration in seconds (like 1.5s)", s)
		}
		if _, err := strconv.ParseFloat(strings.TrimSuffix(s, "s"), 64); err != nil {
			return fmt.Sprintf("%q is not a duration in seconds (like 1.5s)", s)
		}
	case "google.protobuf.FieldMask":
		// Checked against the message it masks by the caller.
	case "google.protobuf.StringValue":
	case "google.protobuf.BoolValue":
		return checkScalar(protoreflect.BoolKind, nil, s)
	case "google.protobuf.Int32Value":
		return checkInt(s, 32)
	case "google.protobuf.Int64Value":
		return checkInt(s, 64)
	case "google.protobuf.UInt32Value":
		return checkUint(s, 32)
	case "google.protobuf.UInt64Value":
		return checkUint(s, 64)
	case "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		return checkScalar(protoreflect.DoubleKind, nil, s)
	default:
		return fmt.Sprintf("a %s cannot be given as text; name a field inside it", m.Name())
	}
	return ""
}

func enumNames(e protoreflect.EnumDescriptor) string {
	vals := e.Values()
	names := make([]string, 0, vals.Len())
	for i := range vals.Len() {
		names = append(names, string(vals.Get(i).Name()))
	}
	return strings.Join(names, ", ")
}

// fieldNames lists a message's fields by proto name, for messages that
// say what is allowed.
func fieldNames(m protoreflect.MessageDescriptor) string {
	fs := m.Fields()
	names := make([]string, 0, fs.Len())
	for i := range fs.Len() {
		names = append(names, string(fs.Get(i).Name()))
	}
	return strings.Join(names, ", ")
}

// fieldByName finds a field by its proto name or its JSON name.
func fieldByName(m protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if f := m.Fields().ByName(protoreflect.Name(name)); f != nil {
		return f
	}
	return m.Fields().ByJSONName(name)
}
