package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func assertViolations(t *testing.T, got, want []Violation) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", renderList(got), renderList(want))
	}
}

func renderList(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %q %q\n", v.Path, v.Message)
	}
	return b.String()
}

func assertInvalid(t *testing.T, sch *Schema, instance any, want []Violation) {
	t.Helper()
	err := sch.Validate(instance)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v (%T), want *ValidationError", err, err)
	}
	assertViolations(t, ve.Violations, want)
}

const deploymentSchema = `{
  "type": "object",
  "required": ["name", "replicas"],
  "additionalProperties": false,
  "properties": {
    "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
    "size": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    "mode": {"enum": ["a", "b", 1, null]},
    "c": {"const": "x"},
    "email": {"format": "email"},
    "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "minItems": 1, "maxItems": 2},
    "pick": {"oneOf": [{"type": "object", "required": ["a"]}, {"type": "object", "required": ["b"]}]},
    "pick2": {"oneOf": [{"type": "object"}, {"required": ["b"]}]},
    "labels": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "maxProperties": 1},
    "nope": false,
    "n": {"not": {"type": "string"}},
    "dep": {"dependentRequired": {"a": ["c", "b"]}},
    "any2": {"anyOf": [{"type": "object", "required": ["x"]}, {"type": "object", "required": ["y"]}, {"type": "string"}]},
    "ue": {"type": "object", "properties": {"a": true}, "unevaluatedProperties": false},
    "big": {"maximum": 9007199254740992},
    "when": {"type": "string", "format": "date-time"},
    "list": {"type": "array", "contains": {"const": 1}, "minContains": 2}
  }
}`

func TestValidateMessages(t *testing.T) {
	sch := mustCompile(t, deploymentSchema)
	tests := []struct {
		instance string
		want     []Violation
	}{
		{`{"name":"abc","replicas":2}`, nil},
		{`{"name":"ab","replicas":0}`, []Violation{
			{"/name", "must be at least 3 characters long, got 2"},
			{"/replicas", "must be >= 1"},
		}},
		{`{"name":"ABCDEFG","replicas":3.5,"other":2,"extra":1}`, []Violation{
			{"/extra", "property is not allowed"},
			{"/name", "must be at most 5 characters long, got 7"},
			{"/name", `must match pattern "^[a-z]+$"`},
			{"/other", "property is not allowed"},
			{"/replicas", "must be integer, got number"},
		}},
		{`{"name":"abc","replicas":12}`, []Violation{{"/replicas", "must be <= 10"}}},
		{`{"name":"abc","replicas":3}`, []Violation{{"/replicas", "must be a multiple of 2"}}},
		{`{"name":"abc","replicas":2,"size":{},"mode":"z","c":"y","email":"nope","tags":["a","a","b"]}`, []Violation{
			{"/c", `must be "x"`},
			{"/email", "must be a valid email: missing @"},
			{"/mode", `must be one of "a", "b", 1, null`},
			{"/size", "must be integer or string, got object"},
			{"/tags", "items must be unique, but #0 and #1 are equal"},
			{"/tags", "must have at most 2 items, got 3"},
		}},
		{`{"name":"abc","replicas":2,"pick":{},"pick2":{"b":1},"labels":{"A":1,"b":2},"nope":1,"n":"s","dep":{"a":1}}`, []Violation{
			{"/dep", `property "a" requires properties "b", "c"`},
			{"/labels", "must have at most 1 property, got 2"},
			{"/labels", `property name "A" is not allowed: must match pattern "^[a-z]+$"`},
			{"/n", `must not match the "not" schema`},
			{"/nope", "is not allowed"},
			{"/pick", `matches none of the oneOf alternatives: #0: missing required property "a"; #1: missing required property "b"`},
			{"/pick2", "must match exactly one oneOf alternative, but matches #0 and #1"},
		}},
		{`{"name":"abc","replicas":2,"any2":{},"ue":{"a":1,"b":2},"big":9007199254740993,"tags":[]}`, []Violation{
			{"/any2", `matches none of the anyOf alternatives: #0: missing required property "x"; #1: missing required property "y"`},
			{"/big", "must be <= 9007199254740992"},
			{"/tags", "must have at least 1 item, got 0"},
			{"/ue/b", "is not allowed"},
		}},
		{`{"name":"abc","replicas":2,"when":"yesterday","list":[1,2]}`, []Violation{
			{"/list", "must contain at least 2 matching items, got 1"},
			{"/when", "must be a valid date-time: less than 20 characters long"},
		}},
		{`{}`, []Violation{{"", `missing required properties "name", "replicas"`}}},
		{`[]`, []Violation{{"", "must be object, got array"}}},
	}
	for _, tt := range tests {
		t.Run(tt.instance, func(t *testing.T) {
			err := sch.Validate(mustDecode(t, tt.instance))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			assertInvalid(t, sch, mustDecode(t, tt.instance), tt.want)
		})
	}
}

func TestValidateSortsPathsNumerically(t *testing.T) {
	sch := mustCompile(t, `{"items":{"type":"string"}}`)
	items := make([]any, 12)
	for i := range items {
		items[i] = json.Number(fmt.Sprint(i))
	}
	err := sch.Validate(items)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 12 {
		t.Fatalf("Validate = %v, want 12 violations", err)
	}
	for i, v := range ve.Violations {
		if want := fmt.Sprintf("/%d", i); v.Path != want {
			t.Errorf("violation %d path = %q, want %q", i, v.Path, want)
		}
	}
	want := "/0: must be string, got number; /1: must be string, got number; /2: must be string, got number; " +
		"/3: must be string, got number; /4: must be string, got number; /5: must be string, got number; " +
		"/6: must be string, got number; /7: must be string, got number; /8: must be string, got number; " +
		"/9: must be string, got number; and 2 more"
	if got := err.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
}

func TestValidateRendersRootAsSlash(t *testing.T) {
	err := mustCompile(t, `{"type":"object"}`).Validate("x")
	if got, want := err.Error(), "/: must be object, got string"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestValidateIsDeterministic(t *testing.T) {
	// Map iteration order varies between runs; the error must not.
	sch := mustCompile(t, `{"additionalProperties":false,"properties":{"o":{"propertyNames":{"maxLength":1},"additionalProperties":{"type":"integer"}}}}`)
	instance := map[string]any{"o": map[string]any{}}
	for i := range 20 {
		instance[fmt.Sprintf("extra%d", i)] = true
		instance["o"].(map[string]any)[fmt.Sprintf("key%d", i)] = "s"
	}
	first := sch.Validate(instance).Error()
	for range 50 {
		if got := sch.Validate(instance).Error(); got != first {
			t.Fatalf("Validate is not deterministic:\n%s\nthen\n%s", first, got)
		}
	}
}

func TestValidatePropertyNamesOnSeveralObjects(t *testing.T) {
	// Regression: the library reuses the location slice of propertyNames
	// errors; a later sibling must not change where the error is reported.
	sch := mustCompile(t, `{"properties":{"a":{"propertyNames":{"maxLength":2}},"b":{"properties":{"c":{}}},"z":{}}}`)
	instance := mustDecode(t, `{"a":{"long":1},"b":{"c":1},"z":{"c":{"d":1}}}`)
	assertInvalid(t, sch, instance, []Violation{{"/a", `property name "long" is not allowed: must be at most 2 characters long, got 4`}})
}

func TestValidateNumbers(t *testing.T) {
	sch := mustCompile(t, `{"type":"integer","maximum":9007199254740992}`)
	if err := sch.Validate(json.Number("9007199254740992")); err != nil {
		t.Errorf("2^53: %v", err)
	}
	assertInvalid(t, sch, json.Number("9007199254740993"), []Violation{{"", "must be <= 9007199254740992"}})
	assertInvalid(t, sch, 1.5, []Violation{{"", "must be integer, got number"}})
	if err := sch.Validate(int64(7)); err != nil {
		t.Errorf("int64: %v", err)
	}
	assertInvalid(t, sch, json.Number("1e1001"), []Violation{{"", "number 1e1001 has an exponent beyond ±1000"}})
}

func TestValidateRejectsNonJSONValues(t *testing.T) {
	sch := mustCompile(t, `{}`)
	assertInvalid(t, sch, map[string]any{"a": []any{make(chan int)}}, []Violation{{"/a/0", "chan int is not a JSON value"}})
	deep := any("x")
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	err := sch.Validate(deep)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Violations) != 1 || ve.Violations[0].Message != "nesting exceeds 64 levels" {
		t.Errorf("Validate(too deep) = %v, want one nesting violation", err)
	}
}

func TestValidateNilSchemaAcceptsAnything(t *testing.T) {
	var sch *Schema
	if err := sch.Validate(map[string]any{"anything": make(chan int)}); err != nil {
		t.Errorf("nil Schema: Validate = %v, want nil", err)
	}
	if sch.Name() != "" {
		t.Errorf("nil Schema: Name = %q, want empty", sch.Name())
	}
}

func TestValidateConcurrently(t *testing.T) {
	sch := mustCompile(t, deploymentSchema)
	good := mustDecode(t, `{"name":"abc","replicas":2,"tags":["x"]}`)
	bad := mustDecode(t, `{"name":"ab","replicas":0}`)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if err := sch.Validate(good); err != nil {
					errs <- fmt.Errorf("worker %d: good instance: %v", i, err)
					return
				}
				if err := sch.Validate(bad); err == nil {
					errs <- fmt.Errorf("worker %d: bad instance accepted", i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestValidateEscapesPathTokens(t *testing.T) {
	sch := mustCompile(t, `{"properties":{"a/b":{"properties":{"c~d":{"type":"string"}}}}}`)
	assertInvalid(t, sch, mustDecode(t, `{"a/b":{"c~d":1}}`), []Violation{{"/a~1b/c~0d", "must be string, got number"}})
}
