package conversion

import (
	"encoding/json"
	"strings"
	"testing"
)

func schemaOf(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const (
	v1 = `{"type":"object","additionalProperties":false,"required":["name"],
		"properties":{"name":{"type":"string"},"size":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}}`
	v2 = `{"type":"object","additionalProperties":false,"required":["name"],
		"properties":{"name":{"type":"string"},"size_gb":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}}`
)

func TestCompileChecksBothSchemas(t *testing.T) {
	for _, tc := range []struct{ name, expr, want string }{
		{"ok", `{"name": spec.name, "size_gb": spec.size * 1024}`, ""},
		{"ok optional", `{"name": spec.name, ?"size_gb": spec.?size}`, ""},
		{"old field misspelled", `{"name": spec.nme}`, `conversion.expr: 1:14: undefined field 'nme'`},
		{"new field misspelled", `{"name": spec.name, "sise_gb": 1}`,
			`conversion.expr: 1:21: field "sise_gb" is not in the spec_schema of v2, which declares "name", "size_gb", "tags"`},
		{"wrong type", `{"name": spec.size}`,
			`conversion.expr: 1:14: /name: the expression is int, but the schema wants string (the spec_schema of v2)`},
		{"wrong item type", `{"name": "x", "tags": [1, 2]}`, `/tags: its items: the expression is int`},
		{"required missing", `{"size_gb": 1}`, `conversion.expr: 1:1: misses "name", which the spec_schema of v2 requires`},
		{"carried field gone", `spec`, `carries field "size" over, which the spec_schema of v2 does not declare`},
		{"not an object", `spec.name`, `the expression is string, but the schema wants object`},
		{"syntax", `{"name": `, `conversion.expr: 1:10: Syntax error`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(1, 2, tc.expr, schemaOf(t, v1), schemaOf(t, v2))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Compile: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Compile accepted %s, want %q", tc.expr, tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Compile error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestCheckVersions(t *testing.T) {
	if _, err := Compile(2, 2, `spec`, nil, nil); err == nil || !strings.Contains(err.Error(),
		"conversion.from_version: converts from version 2, which is not an earlier version than kind_version 2") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Compile(0, 1, `spec`, nil, nil); err == nil {
		t.Fatal("a conversion into version 1 was accepted")
	}
	if got := FromVersion(0, 3); got != 2 {
		t.Fatalf("FromVersion(0, 3) = %d", got)
	}
}

func TestConvert(t *testing.T) {
	c, err := Compile(0, 2, `{"name": spec.name, "size_gb": 1024 / spec.size}`, schemaOf(t, v1), schemaOf(t, v2))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Convert(map[string]any{"name": "a", "size": json.Number("4")})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(out); string(b) != `{"name":"a","size_gb":256}` {
		t.Fatalf("Convert = %s", b)
	}
	_, err = c.Convert(map[string]any{"name": "b", "size": json.Number("0")})
	if err == nil || !strings.Contains(err.Error(), "conversion.expr: 1:37: division by zero") {
		t.Fatalf("Convert of size 0: %v", err)
	}
	_, err = c.Convert(map[string]any{"name": "c"})
	if err == nil || !strings.Contains(err.Error(), "conversion.expr: 1:") || !strings.Contains(err.Error(), "size") {
		t.Fatalf("Convert without size: %v", err)
	}
}

// FuzzCompile: any expression over any schema compiles or is refused with
// an *Error, and a compiled one runs on any spec without panicking.
func FuzzCompile(f *testing.F) {
	f.Add(`{"name": spec.name, "size_gb": spec.size * 1024}`, `{"name":"x","size":3}`)
	f.Add(`spec`, `{}`)
	f.Add(`{"name": spec.tags[2]}`, `{"tags":["a"]}`)
	f.Fuzz(func(t *testing.T, expr, spec string) {
		c, err := Compile(1, 2, expr, schemaOf(t, v1), schemaOf(t, v2))
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Compile error %T: %v", err, err)
			}
			return
		}
		var doc map[string]any
		d := json.NewDecoder(strings.NewReader(spec))
		d.UseNumber()
		if d.Decode(&doc) != nil {
			return
		}
		_, _ = c.Convert(doc)
	})
}
