package schema

import (
	"encoding/json"
	"testing"
)

func TestEqualJSON(t *testing.T) {
	equal := [][2]any{
		{nil, nil},
		{json.Number("1"), json.Number("1.0")},
		{json.Number("1"), json.Number("1e0")},
		{json.Number("1"), json.Number("10e-1")},
		{json.Number("0"), json.Number("-0")},
		{json.Number("0.0"), json.Number("0e10")},
		{json.Number("120"), json.Number("1.2E+2")},
		{json.Number("0.1"), 0.1},
		{json.Number("3"), 3},
		{json.Number("3"), int64(3)},
		{json.Number("3"), uint8(3)},
		{json.Number("1e21"), 1e21},
		{float32(0.5), json.Number("0.5")},
		{json.Number("1e999999999999999999999"), json.Number("1e999999999999999999999")},
		{json.Number("1e00000000000000000000000005"), json.Number("100000")},
		{map[string]any{"a": []any{json.Number("1")}}, map[string]any{"a": []any{1.0}}},
		{[]any{}, []any{}},
	}
	for _, p := range equal {
		if !EqualJSON(p[0], p[1]) || !EqualJSON(p[1], p[0]) {
			t.Errorf("EqualJSON(%#v, %#v) = false, want true", p[0], p[1])
		}
	}
	unequal := [][2]any{
		{nil, false},
		{json.Number("1"), json.Number("2")},
		{json.Number("1"), json.Number("-1")},
		{json.Number("9007199254740993"), json.Number("9007199254740992")},
		{json.Number("9007199254740993"), 9007199254740992.0},
		{json.Number("1e999999999999999999999"), json.Number("1e999999999999999999998")},
		{json.Number("abc"), json.Number("abd")},
		{json.Number("1"), "1"},
		{"a", "b"},
		{true, false},
		{map[string]any{"a": nil}, map[string]any{"b": nil}},
		{map[string]any{"a": nil}, map[string]any{}},
		{[]any{json.Number("1")}, []any{json.Number("1"), json.Number("1")}},
		{[]any{}, map[string]any{}},
	}
	for _, p := range unequal {
		if EqualJSON(p[0], p[1]) || EqualJSON(p[1], p[0]) {
			t.Errorf("EqualJSON(%#v, %#v) = true, want false", p[0], p[1])
		}
	}
}

// TestEqualJSONMatchesConst checks EqualJSON against the validator's own
// equality ("const") on values within this package's limits, the domain
// in which package compat relies on the two agreeing.
func TestEqualJSONMatchesConst(t *testing.T) {
	values := []string{
		`null`, `true`, `false`, `0`, `-0`, `0.0`, `1`, `1.0`, `1e0`, `10e-1`, `2`, `-1`,
		`0.1`, `1e-1`, `1.5`, `15e-1`, `1e21`, `1E+21`, `9007199254740993`, `9007199254740992`,
		`1e1000`, `10e999`, `1e-1000`, `""`, `"1"`, `"a"`, `[]`, `[1]`, `[1.0]`, `[1,2]`, `[2,1]`,
		`{}`, `{"a":1}`, `{"a":1.0}`, `{"a":1,"b":2}`, `{"b":2,"a":1}`, `{"a":null}`, `{"b":null}`,
	}
	for _, a := range values {
		for _, b := range values {
			va, vb := mustDecode(t, a), mustDecode(t, b)
			s, err := Compile("const", map[string]any{"const": va})
			if err != nil {
				t.Fatalf("Compile const %s: %v", a, err)
			}
			valid := s.Validate(vb) == nil
			if got := EqualJSON(va, vb); got != valid {
				t.Errorf("EqualJSON(%s, %s) = %v; the validator's const says %v", a, b, got, valid)
			}
		}
	}
}
