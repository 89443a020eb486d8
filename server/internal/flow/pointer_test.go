package flow

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

// decode parses JSON the way the server does, keeping numbers exact.
func decode(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in     string
		tokens []string
	}{
		{"", nil},
		{"/foo", []string{"foo"}},
		{"/foo/0", []string{"foo", "0"}},
		{"/", []string{""}},
		{"//", []string{"", ""}},
		{"/a~1b", []string{"a/b"}},
		{"/c%d", []string{"c%d"}},
		{"/e^f", []string{"e^f"}},
		{"/g|h", []string{"g|h"}},
		{"/i\\j", []string{"i\\j"}},
		{"/k\"l", []string{"k\"l"}},
		{"/ ", []string{" "}},
		{"/m~0n", []string{"m~n"}},
		{"/~01", []string{"~1"}},
		{"/~10", []string{"/0"}},
		{"/-", []string{"-"}},
		{"/ünï/cödé", []string{"ünï", "cödé"}},
	}
	for _, tt := range tests {
		p, err := ParsePointer(tt.in)
		if err != nil {
			t.Errorf("ParsePointer(%q): %v", tt.in, err)
			continue
		}
		if len(p.tokens) != len(tt.tokens) || (len(tt.tokens) > 0 && !reflect.DeepEqual(p.tokens, tt.tokens)) {
			t.Errorf("ParsePointer(%q) tokens = %q, want %q", tt.in, p.tokens, tt.tokens)
		}
		if p.String() != tt.in {
			t.Errorf("ParsePointer(%q).String() = %q", tt.in, p.String())
		}
	}
}

func TestParsePointerErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"foo", `pointer "foo" must start with "/" (or be "" for the whole document)`},
		{"#/foo", `pointer "#/foo" must start with "/"`},
		{"/a~2b", `pointer "/a~2b": "~2" at byte 2 is not an escape; write "~0" for "~" and "~1" for "/"`},
		{"/ok/a~", `pointer "/ok/a~": "~" at byte 5 is not an escape`},
		{"/x/~é", `pointer "/x/~é": "~é" at byte 3 is not an escape`},
		{"/a\xffb", `is not valid UTF-8`},
	}
	for _, tt := range tests {
		_, err := ParsePointer(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParsePointer(%q) error = %v, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestPointerGet(t *testing.T) {
	// The example document of RFC 6901, section 5.
	doc := decode(t, `{"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4,
		"i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8, "nested": {"null": null, "list": [{"x": true}]}}`)
	found := []struct {
		ptr  string
		want string // JSON
	}{
		{"/foo", `["bar", "baz"]`},
		{"/foo/0", `"bar"`},
		{"/foo/1", `"baz"`},
		{"/", `0`},
		{"/a~1b", `1`},
		{"/c%d", `2`},
		{"/e^f", `3`},
		{"/g|h", `4`},
		{"/i\\j", `5`},
		{"/k\"l", `6`},
		{"/ ", `7`},
		{"/m~0n", `8`},
		{"/nested/null", `null`},
		{"/nested/list/0/x", `true`},
	}
	for _, tt := range found {
		got, ok := mustParse(t, tt.ptr).Get(doc)
		if !ok || !schema.EqualJSON(got, decode(t, tt.want)) {
			t.Errorf("Get(%q) = %v, %v; want %s", tt.ptr, got, ok, tt.want)
		}
	}
	if got, ok := mustParse(t, "").Get(doc); !ok || !schema.EqualJSON(got, doc) {
		t.Errorf(`Get("") = %v, %v; want the whole document`, got, ok)
	}
	absent := []string{"/nope", "/foo/2", "/foo/-", "/foo/01", "/foo/-1", "/foo/x", "/foo/0/x",
		"/a~1b/x", "/nested/null/x", "/nested/list/99999999999999999999999", "/m~1n"}
	for _, ptr := range absent {
		if got, ok := mustParse(t, ptr).Get(doc); ok {
			t.Errorf("Get(%q) = %v, true; want absent", ptr, got)
		}
	}
	if _, ok := mustParse(t, "/a").Get(nil); ok {
		t.Error(`Get("/a") on a null document found something`)
	}
}

func mustParse(t testing.TB, s string) Pointer {
	t.Helper()
	p, err := ParsePointer(s)
	if err != nil {
		t.Fatalf("ParsePointer(%q): %v", s, err)
	}
	return p
}

func TestPointerSet(t *testing.T) {
	tests := []struct {
		name, doc, ptr, value, want string
	}{
		{"root replaces", `{"a": 1}`, "", `[1]`, `[1]`},
		{"existing key", `{"a": 1, "b": 2}`, "/a", `3`, `{"a": 3, "b": 2}`},
		{"new key", `{"a": 1}`, "/b", `"x"`, `{"a": 1, "b": "x"}`},
		{"missing objects are created", `{"a": 1}`, "/b/c/d", `true`, `{"a": 1, "b": {"c": {"d": true}}}`},
		{"null becomes an object", `{"a": null}`, "/a/b", `1`, `{"a": {"b": 1}}`},
		{"null document", `null`, "/a/b", `1`, `{"a": {"b": 1}}`},
		{"array index", `{"l": [1, 2, 3]}`, "/l/1", `9`, `{"l": [1, 9, 3]}`},
		{"inside an array element", `{"l": [{"x": 1}]}`, "/l/0/y", `2`, `{"l": [{"x": 1, "y": 2}]}`},
		{"append", `{"l": [1]}`, "/l/-", `2`, `{"l": [1, 2]}`},
		{"append to empty", `{"l": []}`, "/l/-", `{}`, `{"l": [{}]}`},
		{"append an object and set in it", `{"l": [1]}`, "/l/-/x", `2`, `{"l": [1, {"x": 2}]}`},
		{"escaped keys", `{}`, "/a~1b/m~0n", `1`, `{"a/b": {"m~n": 1}}`},
		{"empty key", `{}`, "/", `1`, `{"": 1}`},
		{"dash is a key in an object", `{}`, "/-", `1`, `{"-": 1}`},
		{"replace an object with a value", `{"a": {"b": 1}}`, "/a", `null`, `{"a": null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := decode(t, tt.doc)
			before := copyJSON(doc)
			got, err := mustParse(t, tt.ptr).Set(doc, decode(t, tt.value))
			if err != nil {
				t.Fatalf("Set: %v", err)
			}
			if !reflect.DeepEqual(got, decode(t, tt.want)) {
				t.Errorf("Set = %#v, want %s", got, tt.want)
			}
			if !reflect.DeepEqual(doc, before) {
				t.Errorf("Set changed its input to %#v", doc)
			}
		})
	}
}

func TestPointerSetErrors(t *testing.T) {
	tests := []struct{ doc, ptr, want string }{
		{`{"l": [1, 2]}`, "/l/5", `pointer "/l/5": index 5 is past the end of /l (length 2); use "-" to append`},
		{`{"l": [1, 2]}`, "/l/2", `index 2 is past the end of /l (length 2)`},
		{`{"l": [1]}`, "/l/x", `pointer "/l/x": /l is an array and "x" is not an index (want 0, 1, ... or "-" to append)`},
		{`{"l": [1]}`, "/l/01", `"01" is not an index`},
		{`[1]`, "/x", `pointer "/x": / is an array and "x" is not an index`},
		{`{"s": "str"}`, "/s/x", `pointer "/s/x": cannot step into /s: it is a string, not an object or array`},
		{`{"a": {"n": 1}}`, "/a/n/x/y", `cannot step into /a/n: it is a number`},
		{`{"b": true}`, "/b/x", `it is a boolean`},
		{`{"l": [[1]]}`, "/l/0/3", `index 3 is past the end of /l/0 (length 1)`},
	}
	for _, tt := range tests {
		doc := decode(t, tt.doc)
		before := copyJSON(doc)
		got, err := mustParse(t, tt.ptr).Set(doc, "v")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Set(%s, %q) = %v, %v; want error containing %q", tt.doc, tt.ptr, got, err, tt.want)
		}
		if !reflect.DeepEqual(doc, before) {
			t.Errorf("Set(%s, %q) changed its input", tt.doc, tt.ptr)
		}
	}
}

// The result of Set shares untouched parts with its input but never the
// containers along the path, so writing through the result's path cannot
// reach the input.
func TestPointerSetCopiesThePath(t *testing.T) {
	doc := decode(t, `{"a": {"b": {"c": 1}, "keep": [1]}, "l": [{"x": 1}]}`)
	before := copyJSON(doc)
	out, err := mustParse(t, "/a/b/c").Set(doc, 2)
	if err != nil {
		t.Fatal(err)
	}
	out.(map[string]any)["a"].(map[string]any)["b"].(map[string]any)["new"] = true
	out.(map[string]any)["a"].(map[string]any)["added"] = true
	out2, err := mustParse(t, "/l/0/x").Set(doc, 2)
	if err != nil {
		t.Fatal(err)
	}
	out2.(map[string]any)["l"].([]any)[0].(map[string]any)["y"] = 3
	if !reflect.DeepEqual(doc, before) {
		t.Errorf("input changed through the result: %#v", doc)
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"}, {map[string]any{}, "an object"}, {[]any{}, "an array"}, {"", "a string"},
		{true, "a boolean"}, {json.Number("1"), "a number"}, {1.5, "a number"}, {7, "a number"},
		{struct{}{}, "a Go struct {} (not a JSON value)"},
	}
	for _, tt := range tests {
		if got := describe(tt.v); got != tt.want {
			t.Errorf("describe(%#v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}
