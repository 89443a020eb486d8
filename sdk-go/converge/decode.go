package converge

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

// DecodeError reports a JSON value (a spec, a status, a config, an
// operation input) that does not fit the Go type it is decoded into, and
// where.
type DecodeError struct {
	// Path is where in the value the problem is, e.g. "spec.ports[1].port";
	// the value's name alone ("spec") when the value as a whole is wrong or
	// the place cannot be told.
	Path string
	// Problem says what is wrong there, e.g. "want integer, got string".
	Problem string
	// Err is the error of encoding/json.
	Err error
}

func (e *DecodeError) Error() string { return e.Path + ": " + e.Problem }

// Unwrap lets errors.As find the encoding/json error.
func (e *DecodeError) Unwrap() error { return e.Err }

// decodeJSON unmarshals data, the value called name ("spec"), into v, as
// json.Unmarshal does: fields v has no place for are ignored. Empty data
// leaves v unchanged. A failure is a *DecodeError.
func decodeJSON(name string, data []byte, v any) error {
	if len(data) == 0 {
		return nil
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	de := &DecodeError{Path: name, Problem: err.Error(), Err: err}
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		de.Problem = typeProblem(typeErr)
		if p, ok := pathAt(data, typeErr.Offset); ok {
			de.Path = name + p
		} else if typeErr.Field != "" {
			de.Path = name + "." + typeErr.Field
		}
	case errors.As(err, &syntaxErr):
		de.Problem = "invalid JSON at byte " + strconv.FormatInt(syntaxErr.Offset, 10) + ": " + syntaxErr.Error()
	}
	return de
}

// typeProblem says what a type error found, in JSON's terms.
func typeProblem(e *json.UnmarshalTypeError) string {
	want := jsonKind(e.Type)
	got := e.Value
	if got == "bool" {
		got = "boolean"
	}
	if num, ok := strings.CutPrefix(got, "number "); ok {
		fraction := strings.ContainsAny(num, ".eE")
		if want == "number" || want == "integer" && !fraction {
			return fmt.Sprintf("number %s is out of the range of Go type %s", num, e.Type)
		}
	}
	return "want " + want + ", got " + got
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "string"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string (base64)"
		}
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return t.String()
}

// pathAt finds the value of the JSON document data that encoding/json
// reports a type error at: the value that ends at offset (a scalar) or
// whose opening bracket ends there. It returns the value's path below the
// root, e.g. `.ports[1].port` or `.labels["app.kubernetes.io/name"]`; ""
// is the root itself.
func pathAt(data []byte, offset int64) (string, bool) {
	type frame struct {
		array bool
		index int
		key   string
		// inKey: the object's next token is a key (or its end).
		inKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			} else {
				b.WriteString(pathKey(f.key))
			}
		}
		return b.String()
	}
	// done moves the enclosing container past a finished value.
	done := func() {
		if len(stack) == 0 {
			return
		}
		if f := stack[len(stack)-1]; f.array {
			f.index++
		} else {
			f.inKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		end := dec.InputOffset()
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].inKey {
			if key, ok := tok.(string); ok {
				stack[n-1].key, stack[n-1].inKey = key, false
				continue
			}
		}
		switch tok {
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
			continue
		}
		if end == offset {
			return path(), true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{inKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{array: true})
		default:
			done()
		}
	}
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pathKey renders an object key as a path step: `.name`, or `["a.b"]` for
// a key that is not an identifier.
func pathKey(k string) string {
	if identifier.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}
