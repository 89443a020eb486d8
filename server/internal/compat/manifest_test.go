package compat

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func structOf(t *testing.T, s string) *structpb.Struct {
	t.Helper()
	m, ok := doc(t, s).(map[string]any)
	if !ok {
		t.Fatalf("%s is not an object", s)
	}
	st, err := structpb.NewStruct(normalizeNumbers(m).(map[string]any))
	if err != nil {
		t.Fatalf("structpb: %v", err)
	}
	return st
}

// normalizeNumbers turns json.Number into float64, as structpb wants.
func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = normalizeNumbers(val)
		}
	case []any:
		for i, val := range x {
			x[i] = normalizeNumbers(val)
		}
	default:
		if r, ok := toRat(v); ok {
			f, _ := r.Float64()
			return f
		}
	}
	return v
}

func manifest(t *testing.T, spec, status, input string) *convergev1.KindManifest {
	m := &convergev1.KindManifest{
		Kind:        "db.cluster",
		KindVersion: 1,
		Reactions: []*convergev1.Reaction{
			{Name: "compose", Trigger: "specChange", Emits: []string{"children", "status"}},
			{Name: "restart", Trigger: "operation", Verb: "restart", Emits: []string{"operationOutput"}},
		},
		Operations: []*convergev1.OperationDecl{{Verb: "restart"}},
	}
	if spec != "" {
		m.SpecSchema = structOf(t, spec)
	}
	if status != "" {
		m.StatusSchema = structOf(t, status)
	}
	if input != "" {
		m.Operations[0].InputSchema = structOf(t, input)
	}
	return m
}

func strs(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

func TestCheckManifest(t *testing.T) {
	spec := `{"type":"object","properties":{"replicas":{"type":"integer","minimum":1}}}`
	status := `{"type":"object","properties":{"endpoint":{"type":"string"}}}`
	input := `{"type":"object","properties":{"force":{"type":"boolean"}}}`
	old := manifest(t, spec, status, input)

	t.Run("identical", func(t *testing.T) {
		got, err := CheckManifest(old, manifest(t, spec, status, input))
		if err != nil || len(got) > 0 {
			t.Fatalf("CheckManifest = %q, %v; want nothing", strs(got), err)
		}
	})
	t.Run("secrecy", func(t *testing.T) {
		got, err := CheckManifest(old, manifest(t, spec,
			`{"type":"object","properties":{"endpoint":{"type":"string"},"password":{"type":"string","writeOnly":true}}}`, input))
		if err != nil {
			t.Fatal(err)
		}
		want := `status_schema /password: secrecy-changed: the property became secret; secrecy changes only in a new kind_version`
		if len(got) != 1 || got[0].String() != want {
			t.Errorf("CheckManifest = %q, want [%s]", strs(got), want)
		}
	})
	t.Run("every field", func(t *testing.T) {
		nm := manifest(t,
			`{"type":"object","properties":{"replicas":{"type":"integer","minimum":3}}}`,
			`{"type":"object","properties":{"endpoint":{"type":"string","format":"uri"}}}`,
			`{"type":"object","properties":{"force":{"type":"boolean"}},"required":["force"]}`)
		nm.ConfigSchema = structOf(t, `{"type":"object","required":["region"]}`)
		nm.Reactions[0].Emits = []string{"children"}
		got, err := CheckManifest(old, nm)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			`spec_schema /replicas: narrowed: minimum was 1, now 3`,
			`status_schema /endpoint: format-added: format "uri" added`,
			`config_schema /region: newly-required: "region" is now required`,
			`operations[restart].input_schema /force: newly-required: "force" is now required`,
			`reactions[compose]: reaction-changed: no longer emits "status"`,
		}
		if !slices.Equal(strs(got), want) {
			t.Errorf("CheckManifest:\n got  %q\n want %q", strs(got), want)
		}
	})
	t.Run("removed reaction and operation", func(t *testing.T) {
		nm := manifest(t, spec, status, input)
		nm.Reactions = nm.Reactions[:1]
		nm.Operations = nil
		got, err := CheckManifest(old, nm)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			`operations[restart]: removed: operation "restart" was removed`,
			`reactions[restart]: removed: reaction "restart" was removed`,
		}
		if !slices.Equal(strs(got), want) {
			t.Errorf("CheckManifest:\n got  %q\n want %q", strs(got), want)
		}
	})
	t.Run("trigger changed", func(t *testing.T) {
		nm := manifest(t, spec, status, input)
		nm.Reactions[1].Trigger = "resync"
		nm.Reactions[1].Verb = ""
		got, _ := CheckManifest(old, nm)
		want := []string{`reactions[restart]: reaction-changed: trigger was "operation", now "resync"`}
		if !slices.Equal(strs(got), want) {
			t.Errorf("CheckManifest:\n got  %q\n want %q", strs(got), want)
		}
	})
	t.Run("additive everywhere", func(t *testing.T) {
		nm := manifest(t,
			`{"type":"object","properties":{"replicas":{"type":"integer","minimum":0},"zone":{"type":"string"}}}`,
			`{"type":"object","properties":{"endpoint":{"type":["string","null"]},"port":{"type":"integer"}}}`,
			`{"type":"object","properties":{"force":{"type":"boolean"},"reason":{"type":"string"}}}`)
		nm.Reactions = append(nm.Reactions, &convergev1.Reaction{Name: "observe", Trigger: "resync", Emits: []string{"status"}})
		nm.Reactions[0].Emits = append(nm.Reactions[0].Emits, "conditions")
		nm.Operations = append(nm.Operations, &convergev1.OperationDecl{Verb: "backup"})
		nm.Policy = &convergev1.KindPolicy{MaxInflight: 3}
		got, err := CheckManifest(old, nm)
		if err != nil || len(got) > 0 {
			t.Fatalf("CheckManifest = %q, %v; want nothing", strs(got), err)
		}
	})
	t.Run("absent schema gains one", func(t *testing.T) {
		// Specs are objects, so "type": "object" costs nothing; the
		// required property does.
		om := manifest(t, "", status, input)
		nm := manifest(t, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, status, input)
		got, err := CheckManifest(om, nm)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{`spec_schema /a: newly-required: "a" is now required`}
		if !slices.Equal(strs(got), want) {
			t.Errorf("CheckManifest:\n got  %q\n want %q", strs(got), want)
		}
	})
	t.Run("schema removed", func(t *testing.T) {
		got, err := CheckManifest(old, manifest(t, "", "", ""))
		if err != nil || len(got) > 0 {
			t.Fatalf("CheckManifest = %q, %v; want nothing", strs(got), err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := CheckManifest(nil, old); err == nil {
			t.Error("CheckManifest(nil, m): no error")
		}
		bad := manifest(t, `{"type":"object","properties":{"a":{"type":"int"}}}`, status, input)
		_, err := CheckManifest(old, bad)
		if err == nil || !strings.Contains(err.Error(), "spec_schema: new schema: new/properties/a/type") {
			t.Errorf("CheckManifest with a bad new spec_schema: error %v, want it to name spec_schema and the path", err)
		}
	})
}

func TestCheckErrors(t *testing.T) {
	for _, tt := range []struct{ old, new, want string }{
		{`{"type":"int"}`, `{}`, "old schema: old/type"},
		{`{}`, `{"$ref":"https://example.com/x.json"}`, "new schema: new/$ref"},
		{`{}`, `{"$schema":"http://json-schema.org/draft-07/schema#"}`, "new schema: new/$schema"},
	} {
		_, err := Check(doc(t, tt.old), doc(t, tt.new))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%s, %s): error %v, want one containing %q", tt.old, tt.new, err, tt.want)
		}
	}
	if _, err := Check(map[string]any{"minimum": make(chan int)}, map[string]any{}); err == nil {
		t.Error("Check with a non-JSON value: no error")
	}
}

// TestAssertedFormats keeps the list of asserted formats in step with the
// validator: each must refuse a bad value, and an unknown one must not.
func TestAssertedFormats(t *testing.T) {
	bad := "\x00 not valid {("
	for f := range assertedFormats {
		if v := validates(t, `{"format":"`+f+`"}`, bad); v {
			t.Errorf("format %q accepts %q, so it may not be asserted", f, bad)
		}
	}
	if !validates(t, `{"format":"custom"}`, bad) {
		t.Error(`format "custom" refuses a value; unknown formats are expected to be annotations`)
	}
}
