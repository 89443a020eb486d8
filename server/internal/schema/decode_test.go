package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeValues(t *testing.T) {
	v, err := Decode([]byte(` {"a": [1, 2.5, "x", true, null], "big": 9007199254740993} `))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	obj := v.(map[string]any)
	if got := obj["big"]; got != json.Number("9007199254740993") {
		t.Errorf("big = %#v, want the exact json.Number", got)
	}
	arr := obj["a"].([]any)
	want := []any{json.Number("1"), json.Number("2.5"), "x", true, nil}
	for i := range want {
		if arr[i] != want[i] {
			t.Errorf("a[%d] = %#v, want %#v", i, arr[i], want[i])
		}
	}
	if v, err := Decode([]byte(`[]`)); err != nil || len(v.([]any)) != 0 {
		t.Errorf("Decode([]) = %#v, %v; want an empty []any", v, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"blank", " \n\t", "empty input"},
		{"trailing value", `{} {}`, "unexpected data after the value at byte offset 3"},
		{"trailing garbage", `1 x`, "unexpected data after the value"},
		{"duplicate key", `{"a":{"b":1,"b":2}}`, `/a: duplicate key "b"`},
		{"too deep", deep, "nesting exceeds 64 levels"},
		{"syntax", `{"a":1,}`, "invalid at byte offset"},
		{"truncated", `{"a":[1,2`, "input ends inside the value at /a"},
		{"long number", "1" + strings.Repeat("0", MaxNumberLength), "number literal is 129 characters long"},
		{"huge exponent", `{"n":1e1001}`, "/n: number 1e1001 has an exponent beyond ±1000"},
		{"tiny exponent", `[1E-1001]`, "/0: number 1E-1001 has an exponent"},
		{"bare word", `nope`, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("Decode(%q) = %#v, want error containing %q", tt.in, v, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestDecodeLimitsAreInclusive(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	for _, in := range []string{deep, "1e1000", "-1E-1000", "1" + strings.Repeat("0", MaxNumberLength-1)} {
		if _, err := Decode([]byte(in)); err != nil {
			t.Errorf("Decode(%.20q...) = %v, want success at the limit", in, err)
		}
	}
}

func TestIsNumberLiteral(t *testing.T) {
	good := []string{"0", "-0", "1", "-12", "1.5", "0.25e10", "1E+2", "1e-2"}
	bad := []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "0x10", "NaN", "1 "}
	for _, s := range good {
		if !isNumberLiteral(s) {
			t.Errorf("isNumberLiteral(%q) = false, want true", s)
		}
	}
	for _, s := range bad {
		if isNumberLiteral(s) {
			t.Errorf("isNumberLiteral(%q) = true, want false", s)
		}
	}
}
