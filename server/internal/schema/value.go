package schema

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// valueError is a problem with a JSON value itself (its Go type, depth or a
// number), found before any schema is consulted.
type valueError struct {
	path    []string
	message string
}

func (e *valueError) Error() string {
	return DisplayPointer(JoinPointer("", e.path...)) + ": " + e.message
}

func (e *valueError) violation() Violation {
	return Violation{Path: JoinPointer("", e.path...), Message: e.message}
}

// normalize returns a copy of v made only of the types the validator
// understands: map[string]any, []any, string, bool, nil and json.Number.
// It accepts what encoding/json (with or without UseNumber) and
// structpb.Struct.AsMap produce, plus Go integer types, and enforces
// MaxDepth and the number limits. Copying also means the compiled schema
// never shares maps with the caller.
func normalize(v any) (any, error) {
	return normalizeAt(v, nil, 0)
}

func normalizeAt(v any, path []string, depth int) (any, error) {
	switch x := v.(type) {
	case nil, bool, string:
		return x, nil
	case json.Number:
		if err := checkNumber(string(x)); err != nil {
			return nil, &valueError{path, err.Error()}
		}
		return x, nil
	case float64:
		return floatNumber(x, path)
	case float32:
		return floatNumber(float64(x), path)
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		text, _ := numberText(x)
		return json.Number(text), nil
	case map[string]any:
		if depth+1 > MaxDepth {
			return nil, depthError(path)
		}
		out := make(map[string]any, len(x))
		for k, item := range x {
			n, err := normalizeAt(item, child(path, k), depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case []any:
		if depth+1 > MaxDepth {
			return nil, depthError(path)
		}
		out := make([]any, len(x))
		for i, item := range x {
			n, err := normalizeAt(item, child(path, strconv.Itoa(i)), depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	default:
		return nil, &valueError{path, fmt.Sprintf("%T is not a JSON value", v)}
	}
}

// child appends a token without sharing the parent's backing array, so
// sibling paths never overwrite each other.
func child(path []string, token string) []string {
	return append(path[:len(path):len(path)], token)
}

func depthError(path []string) *valueError {
	return &valueError{path, fmt.Sprintf("nesting exceeds %d levels", MaxDepth)}
}

func floatNumber(f float64, path []string) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &valueError{path, "number is not finite (NaN or infinity)"}
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
}

// checkNumber checks that lit is a JSON number literal within
// MaxNumberLength and MaxNumberExponent.
func checkNumber(lit string) error {
	if len(lit) > MaxNumberLength {
		return fmt.Errorf("number literal is %d characters long; the limit is %d", len(lit), MaxNumberLength)
	}
	if !isNumberLiteral(lit) {
		return fmt.Errorf("%q is not a JSON number", lit)
	}
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		exp, err := strconv.Atoi(lit[i+1:])
		if err != nil || exp > MaxNumberExponent || exp < -MaxNumberExponent {
			return fmt.Errorf("number %s has an exponent beyond ±%d", lit, MaxNumberExponent)
		}
	}
	return nil
}

// isNumberLiteral reports whether s matches the JSON number grammar
// (RFC 8259 §6).
func isNumberLiteral(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		i = skipDigits(s, i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		j := skipDigits(s, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := skipDigits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
