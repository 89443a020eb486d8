package document_test

import (
	"testing"

	"github.com/convergehq/converge/server/internal/conctl/document"
)

// FuzzParse checks that no input makes Parse panic and that every document
// it returns carries a message of its type.
func FuzzParse(f *testing.F) {
	seeds := []string{
		manifestYAML,
		resourceYAML,
		manifestYAML + "---\n" + resourceYAML,
		`{"type":"resource","kind":"g","kind_version":1,"name":"a","spec":{"x":[1,2,{"y":null}]}}`,
		`[{"type":"manifest","kind":"g","kind_version":1}]`,
		"type: resource\nspec: &a {b: *a}\n",
		"a: &x [*x]\n",
		"<<: {type: resource}\n",
		"type: manifest\nkind_version: 0x7fffffff\n",
		"type: manifest\nkind_version: 1e3\n",
		"{\"type\":\"manifest\",\"kind_version\":\"12\"}",
		"- 1\n- 2\n",
		"---\n...\n---\n",
		"\xef\xbb\xbftype: resource\n",
		"type: resource\nlabels: {1: 2, true: null}\n",
		providerConfigYAML,
		reactorBindingYAML,
		providerConfigYAML + "---\n" + reactorBindingYAML + "---\n" + resourceYAML + "provider_config: eu\n",
		`{"type":"providerconfig","kind":"g","kindVersion":1,"name":"default","config":{"a":[1,{"b":null}]},"revision":"2"}`,
		`[{"type":"reactorbinding","name":"n","watch_kind":"g","transitions":["failed","failed"],"reactor_kind":"r","reactor_kind_version":1}]`,
		"type: reactorbinding\ntransitions: failed\ndisabled: yes\ncreated_at: 2026-01-01\n",
		"type: providerconfig\nconfig: &c {self: *c}\n",
	}
	for _, s := range seeds {
		f.Add("in.yaml", []byte(s))
		f.Add("stdin", []byte(s))
	}
	f.Fuzz(func(t *testing.T, source string, data []byte) {
		docs, _ := document.Parse(source, data)
		for _, d := range docs {
			if d.Message == nil || d.Index < 1 {
				t.Fatalf("document %+v has no message or index", d)
			}
		}
	})
}

// FuzzParseObject checks that no input makes ParseObject panic and that it
// returns either a mapping or an error.
func FuzzParseObject(f *testing.F) {
	for _, s := range []string{
		`{"keys": 2}`, "keys: 2\nlist: [a, {b: null}]\n", "[1]", "a: 1\n---\nb: 2\n", "a: &x [*x]\n",
		"{}\n{}", "", "---\n", "a: .nan\n", `{"a":` + "\n",
	} {
		f.Add("--input", []byte(s))
		f.Add("in.yaml", []byte(s))
		f.Add("in.json", []byte(s))
	}
	f.Fuzz(func(t *testing.T, source string, data []byte) {
		s, err := document.ParseObject(source, data)
		if (s == nil) == (err == nil) {
			t.Fatalf("ParseObject returned %v and %v: want exactly one", s, err)
		}
	})
}
