package schema

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
)

func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode(%s): %v", s, err)
	}
	return v
}

func mustCompile(t testing.TB, s string) *Schema {
	t.Helper()
	sch, err := Compile("test", mustDecode(t, s))
	if err != nil {
		t.Fatalf("Compile(%s): %v", s, err)
	}
	return sch
}

// compileViolationsOf compiles doc and returns its violations, failing the
// test if compilation succeeds or fails with another error type.
func compileViolationsOf(t *testing.T, doc any) []Violation {
	t.Helper()
	_, err := Compile("spec_schema", doc)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("Compile error = %v (%T), want *CompileError", err, err)
	}
	if ce.Name != "spec_schema" {
		t.Errorf("CompileError.Name = %q, want spec_schema", ce.Name)
	}
	return ce.Violations
}

func TestCompileAccepts(t *testing.T) {
	docs := []string{
		`{}`,
		`true`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object"}`,
		`{"$schema":"http://json-schema.org/draft/2020-12/schema#"}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/a"}},"$defs":{"a":{"type":"integer","minimum":1}}}`,
		`{"$id":"https://example.com/root.json","$defs":{"x":{"$id":"x.json","type":"string"}},"$ref":"x.json"}`,
		`{"$defs":{"node":{"type":"object","properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`,
		`{"$defs":{"a":{"$anchor":"thing","type":"string"}},"properties":{"b":{"$ref":"#thing"}}}`,
		`{"properties":{"name":{"type":"string","pattern":"^\\d+$","format":"x-unknown-format"}}}`,
	}
	for _, d := range docs {
		sch := mustCompile(t, d)
		if sch.Name() != "test" {
			t.Errorf("Name() = %q, want test", sch.Name())
		}
	}
}

func TestCompileReportsSchemaPaths(t *testing.T) {
	tests := []struct {
		doc  string
		want []Violation
	}{
		{
			`{"type":"object","properties":{"replicas":{"type":"strin"}}}`,
			[]Violation{{"/properties/replicas/type", `must be one of "array", "boolean", "integer", "null", "number", "object", "string"`}},
		},
		{
			`{"minimum":"x","maxLength":-1,"required":[1]}`,
			[]Violation{
				{"/maxLength", "must be >= 0"},
				{"/minimum", "must be number, got string"},
				{"/required/0", "must be string, got number"},
			},
		},
		{
			`{"properties":{"a":{"pattern":"(?=x)"}}}`,
			[]Violation{{"/properties/a/pattern", "must be a valid regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"}},
		},
		{`"x"`, []Violation{{"", "must be boolean or object, got string"}}},
		{`{"$anchor":"1bad"}`, []Violation{{"/$anchor", `must match pattern "^[A-Za-z_][-A-Za-z0-9._]*$"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			assertViolations(t, compileViolationsOf(t, mustDecode(t, tt.doc)), tt.want)
		})
	}
}

func TestCompileRefusesReferencesOutsideTheDocument(t *testing.T) {
	// A real file proves the loader refuses the file system, not just
	// missing files.
	file := filepath.Join(t.TempDir(), "other.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  string
		want Violation
	}{
		{`{"properties":{"a":{"$ref":"other.json"}}}`,
			Violation{"/properties/a/$ref", `$ref "other.json" points outside the schema document; only references within the document are allowed`}},
		{`{"items":{"$ref":"https://example.com/x.json#/a"}}`,
			Violation{"/items/$ref", `$ref "https://example.com/x.json#/a" points outside the schema document; only references within the document are allowed`}},
		{`{"anyOf":[{"$ref":"file://` + file + `"}]}`,
			Violation{"/anyOf/0/$ref", `$ref "file://` + file + `" points outside the schema document; only references within the document are allowed`}},
		{`{"$dynamicRef":"meta.json#meta"}`,
			Violation{"/$dynamicRef", `$dynamicRef "meta.json#meta" points outside the schema document; only references within the document are allowed`}},
		{`{"properties":{"a":{"$ref":"#/$defs/missing"}}}`,
			Violation{"/properties/a/$ref", `$ref "#/$defs/missing" points to a location that does not exist in the document`}},
		{`{"properties":{"a":{"$ref":"#nope"}}}`,
			Violation{"/properties/a/$ref", `$ref "#nope" names an anchor that does not exist in the document`}},
		{`{"$id":"https://example.com/root.json","properties":{"a":{"$ref":"other.json"}}}`,
			Violation{"", `reference "https://example.com/other.json" points outside the schema document; only references within the document are allowed`}},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			assertViolations(t, compileViolationsOf(t, mustDecode(t, tt.doc)), []Violation{tt.want})
		})
	}
}

func TestCompileAcceptsOnlyDraft2020(t *testing.T) {
	tests := []struct{ doc, path, dialect string }{
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, "/$schema", "http://json-schema.org/draft-07/schema#"},
		{`{"$schema":"https://json-schema.org/draft/2019-09/schema"}`, "/$schema", "https://json-schema.org/draft/2019-09/schema"},
		{`{"$schema":"https://json-schema.org/schema"}`, "/$schema", "https://json-schema.org/schema"},
		{`{"$schema":"https://example.com/meta"}`, "/$schema", "https://example.com/meta"},
		{`{"$defs":{"a":{"$id":"a.json","$schema":"http://json-schema.org/draft-04/schema#"}}}`, "/$defs/a/$schema", "http://json-schema.org/draft-04/schema#"},
	}
	for _, tt := range tests {
		vs := compileViolationsOf(t, mustDecode(t, tt.doc))
		want := `dialect "` + tt.dialect + `" is not supported; use "https://json-schema.org/draft/2020-12/schema" or leave $schema out`
		assertViolations(t, vs, []Violation{{tt.path, want}})
	}
}

func TestCompileDuplicateIDBlamesTheLaterOne(t *testing.T) {
	vs := compileViolationsOf(t, mustDecode(t, `{"$defs":{"a":{"$id":"x.json"},"b":{"$id":"x.json"}}}`))
	assertViolations(t, vs, []Violation{{"/$defs/b/$id", `$id "x.json" is also declared at /$defs/a`}})
}

func TestCompileLimits(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		fits := map[string]any{"description": strings.Repeat("x", MaxSchemaSize-len(`{"description":""}`))}
		if _, err := Compile("s", fits); err != nil {
			t.Fatalf("schema of exactly MaxSchemaSize bytes: %v", err)
		}
		fits["description"] = fits["description"].(string) + "x"
		vs := compileViolationsOf(t, fits)
		assertViolations(t, vs, []Violation{{"", "schema is 262145 bytes of JSON; the limit is 262144"}})
	})
	t.Run("depth", func(t *testing.T) {
		doc := map[string]any{}
		for range MaxDepth {
			doc = map[string]any{"not": doc}
		}
		vs := compileViolationsOf(t, doc)
		want := "/" + strings.TrimSuffix(strings.Repeat("not/", MaxDepth), "/")
		assertViolations(t, vs, []Violation{{want, "nesting exceeds 64 levels"}})
	})
	t.Run("cyclic Go value", func(t *testing.T) {
		doc := map[string]any{}
		doc["not"] = doc
		vs := compileViolationsOf(t, doc)
		if len(vs) != 1 || vs[0].Message != "nesting exceeds 64 levels" {
			t.Errorf("violations = %v, want one depth violation", vs)
		}
	})
	t.Run("non-finite number", func(t *testing.T) {
		vs := compileViolationsOf(t, map[string]any{"maximum": math.Inf(1)})
		assertViolations(t, vs, []Violation{{"/maximum", "number is not finite (NaN or infinity)"}})
	})
	t.Run("bad json.Number", func(t *testing.T) {
		vs := compileViolationsOf(t, map[string]any{"maximum": json.Number("12abc")})
		assertViolations(t, vs, []Violation{{"/maximum", `"12abc" is not a JSON number`}})
	})
	t.Run("non-JSON Go type", func(t *testing.T) {
		vs := compileViolationsOf(t, map[string]any{"properties": map[string]any{"a": struct{}{}}})
		assertViolations(t, vs, []Violation{{"/properties/a", "struct {} is not a JSON value"}})
	})
}

func TestCompileAcceptsStructpbNumbers(t *testing.T) {
	st, err := structpb.NewStruct(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"replicas": map[string]any{"type": "integer", "minimum": 1, "maximum": 10},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	sch, err := Compile("spec_schema", st.AsMap())
	if err != nil {
		t.Fatalf("Compile(structpb): %v", err)
	}
	spec, err := structpb.NewStruct(map[string]any{"replicas": 0})
	if err != nil {
		t.Fatal(err)
	}
	assertInvalid(t, sch, spec.AsMap(), []Violation{{"/replicas", "must be >= 1"}})
	spec.Fields["replicas"] = structpb.NewNumberValue(3)
	if err := sch.Validate(spec.AsMap()); err != nil {
		t.Errorf("Validate(replicas: 3) = %v, want nil", err)
	}
}

func TestCompileErrorRendering(t *testing.T) {
	ce := &CompileError{Name: "operations[0].input_schema", Violations: []Violation{
		{"", "must be boolean or object, got string"},
		{"/properties/a/type", "must be one of ..."},
	}}
	want := `operations[0].input_schema: must be boolean or object, got string; operations[0].input_schema/properties/a/type: must be one of ...`
	if got := ce.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

func TestCompileDoesNotShareCallerMaps(t *testing.T) {
	doc := map[string]any{"properties": map[string]any{"a": map[string]any{"const": "x"}}}
	sch, err := Compile("s", doc)
	if err != nil {
		t.Fatal(err)
	}
	doc["properties"].(map[string]any)["a"].(map[string]any)["const"] = "changed"
	if err := sch.Validate(map[string]any{"a": "x"}); err != nil {
		t.Errorf("after the caller mutated its map, Validate = %v, want nil", err)
	}
}
