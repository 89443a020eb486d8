package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Decode parses one JSON value for validation. Numbers are kept as
// json.Number so integers beyond 2^53 stay exact. It rejects empty input,
// trailing data after the value, duplicate object keys (parsers disagree on
// which one wins), nesting deeper than MaxDepth and numbers beyond
// MaxNumberLength or MaxNumberExponent. Errors name the JSON pointer or
// byte offset of the problem.
func Decode(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("json: empty input, want a JSON value")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec, nil, 0)
	if err != nil {
		return nil, err
	}
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(data[end:], " \t\r\n"); len(rest) > 0 {
		return nil, fmt.Errorf("json: unexpected data after the value at byte offset %d", len(data)-len(rest))
	}
	return v, nil
}

func decodeValue(dec *json.Decoder, path []string, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(dec, path, err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth+1 > MaxDepth {
			return nil, fmt.Errorf("json: %w", depthError(path))
		}
		if t == '{' {
			return decodeObject(dec, path, depth+1)
		}
		return decodeArray(dec, path, depth+1)
	case json.Number:
		if err := checkNumber(string(t)); err != nil {
			return nil, fmt.Errorf("json: %w", &valueError{path, err.Error()})
		}
		return t, nil
	default: // string, bool or nil
		return t, nil
	}
}

func decodeObject(dec *json.Decoder, path []string, depth int) (any, error) {
	obj := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntaxError(dec, path, err)
		}
		key, _ := tok.(string) // the decoder only yields string keys here
		if _, dup := obj[key]; dup {
			return nil, fmt.Errorf("json: %w", &valueError{path, fmt.Sprintf("duplicate key %q", key)})
		}
		v, err := decodeValue(dec, child(path, key), depth)
		if err != nil {
			return nil, err
		}
		obj[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, syntaxError(dec, path, err)
	}
	return obj, nil
}

func decodeArray(dec *json.Decoder, path []string, depth int) (any, error) {
	arr := []any{}
	for dec.More() {
		v, err := decodeValue(dec, child(path, strconv.Itoa(len(arr))), depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, syntaxError(dec, path, err)
	}
	return arr, nil
}

func syntaxError(dec *json.Decoder, path []string, err error) error {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("json: input ends inside the value at %s", DisplayPointer(JoinPointer("", path...)))
	case errors.As(err, &se):
		return fmt.Errorf("json: invalid at byte offset %d (inside %s): %v", se.Offset, DisplayPointer(JoinPointer("", path...)), err)
	default:
		return fmt.Errorf("json: invalid at byte offset %d (inside %s): %v", dec.InputOffset(), DisplayPointer(JoinPointer("", path...)), err)
	}
}
