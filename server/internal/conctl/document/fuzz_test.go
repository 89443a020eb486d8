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
