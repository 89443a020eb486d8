package document_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

const manifestYAML = `type: manifest
kind: greeting
kind_version: 1
description: Says hello.
spec_schema:
  type: object
  properties:
    greeting: {type: string}
reactions:
  - name: greet
    trigger: specChange
    emits: [status]
policy:
  max_inflight: 10
`

const resourceYAML = `type: resource
kind: greeting
kind_version: 1
name: hello-world
labels:
  team: web
  version: 1.10
spec:
  greeting: Hello
  count: 3
  when: 2024-01-01
`

func TestParseYAMLDocuments(t *testing.T) {
	src := "# leading comment\n---\n" + manifestYAML + "---\n---\n# only a comment\n---\n" + resourceYAML
	docs, err := document.Parse("greeting.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(docs) != 2 {
		t.Fatalf("got %d documents, want 2", len(docs))
	}

	m, ok := docs[0].Message.(*convergev1.KindManifest)
	if !ok || docs[0].Type != "manifest" {
		t.Fatalf("document 1 is %T (%s), want a manifest", docs[0].Message, docs[0].Type)
	}
	if m.Kind != "greeting" || m.KindVersion != 1 || m.Policy.GetMaxInflight() != 10 || len(m.Reactions) != 1 || m.Reactions[0].Emits[0] != "status" {
		t.Fatalf("manifest = %v", m)
	}
	if docs[0].Index != 1 || docs[0].Line != 3 {
		t.Fatalf("manifest at document %d line %d, want document 1 line 3", docs[0].Index, docs[0].Line)
	}

	r, ok := docs[1].Message.(*convergev1.ApplyResourceRequest)
	if !ok {
		t.Fatalf("document 2 is %T, want a resource", docs[1].Message)
	}
	if r.Namespace != "default" {
		t.Errorf("namespace = %q, want the default", r.Namespace)
	}
	if r.Labels["version"] != "1.10" {
		t.Errorf(`label version = %q, want "1.10" as written`, r.Labels["version"])
	}
	spec := r.Spec.AsMap()
	if spec["greeting"] != "Hello" || spec["count"] != float64(3) || spec["when"] != "2024-01-01" {
		t.Errorf("spec = %v", spec)
	}
	if docs[1].Index != 4 {
		t.Errorf("resource is document %d, want 4 (empty documents count)", docs[1].Index)
	}
	if got := docs[1].Where(); got != "greeting.yaml: document 4 (line 21)" {
		t.Errorf("Where() = %q", got)
	}
}

func TestParseJSON(t *testing.T) {
	single := `{"type": "resource", "kind": "greeting", "kindVersion": 2, "name": "a", "namespace": "team-a"}`
	list := `[
  {"type": "manifest", "kind": "greeting", "kind_version": 1},
  {"type": "resource", "kind": "greeting", "kind_version": 1, "name": "b", "spec": {"n": 12345678901}}
]`
	for _, tc := range []struct {
		name, source, data string
		want               []string
	}{
		{"object", "a.json", single, []string{"resource"}},
		{"array", "b.json", list, []string{"manifest", "resource"}},
		{"stream on stdin", "stdin", single + "\n" + list, []string{"resource", "manifest", "resource"}},
		{"empty array", "c.json", "[]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := document.Parse(tc.source, []byte(tc.data))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, d := range docs {
				got = append(got, d.Type)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("types = %v, want %v", got, tc.want)
			}
		})
	}
	docs, _ := document.Parse("b.json", []byte(list))
	if docs[1].Line != 3 || docs[1].Index != 2 {
		t.Errorf("second array element at document %d line %d, want document 2 line 3", docs[1].Index, docs[1].Line)
	}
	r := docs[1].Message.(*convergev1.ApplyResourceRequest)
	if r.Spec.AsMap()["n"] != float64(12345678901) {
		t.Errorf("spec = %v", r.Spec.AsMap())
	}
}

func TestParseDefaultNamespaceOption(t *testing.T) {
	docs, err := document.Parse("r.yaml", []byte(resourceYAML), document.WithDefaultNamespace("team-b"))
	if err != nil {
		t.Fatal(err)
	}
	if ns := docs[0].Message.(*convergev1.ApplyResourceRequest).Namespace; ns != "team-b" {
		t.Fatalf("namespace = %q, want team-b", ns)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, source, data string
		want               string // the whole error text
	}{
		{"unknown field with suggestion", "greeting.yaml",
			manifestYAML + "---\n" + "type: resource\nkind: greeting\nkind_version: 1\nname: x\nspce: {}\n",
			`greeting.yaml: document 2 (line 20): unknown field "spce" (did you mean "spec"?)`},
		{"missing type", "greeting.yaml", "kind: greeting\n",
			`greeting.yaml: document 1 (line 1): missing "type" (one of manifest, providerconfig, reactorbinding, resource)`},
		{"unknown type", "a.yaml", "type: widget\n",
			`a.yaml: document 1 (line 1): unknown type "widget" (one of manifest, providerconfig, reactorbinding, resource)`},
		{"type not a string", "a.yaml", "type: [manifest]\n",
			`a.yaml: document 1 (line 1): "type" must be a string (one of manifest, providerconfig, reactorbinding, resource), got a list`},
		{"not a mapping", "a.yaml", "- type: manifest\n",
			`a.yaml: document 1 (line 1): want a mapping with a "type" key (one of manifest, providerconfig, reactorbinding, resource), got a list`},
		{"nested unknown field", "m.yaml", "type: manifest\nkind: greeting\nkind_version: 1\nreactions:\n  - name: a\n    trigger: specChange\n    emit: [status]\n",
			`m.yaml: document 1 (line 7): reactions[0]: unknown field "emit" (did you mean "emits"?)`},
		{"list expected", "m.yaml", "type: manifest\nkind: greeting\nkind_version: 1\nreactions:\n  - name: a\n    trigger: specChange\n    emits: status\n",
			`m.yaml: document 1 (line 7): reactions[0].emits: want a list, got "status"`},
		{"integer expected", "m.yaml", "type: manifest\nkind: greeting\nkind_version: one\n",
			`m.yaml: document 1 (line 3): kind_version: want an integer, got "one"`},
		{"integer out of range", "m.yaml", "type: manifest\nkind: greeting\nkind_version: 99999999999\n",
			`m.yaml: document 1 (line 3): kind_version: 99999999999 is out of range for int32 (-2147483648..2147483647)`},
		{"not an integer", "m.json", `{"type":"manifest","kind":"g","kind_version":1,"policy":{"max_inflight":1.5}}`,
			`m.json: document 1 (line 1): policy.max_inflight: want an integer, got 1.5`},
		{"spec must be a mapping", "r.yaml", "type: resource\nkind: g\nkind_version: 1\nname: a\nspec: [1]\n",
			`r.yaml: document 1 (line 5): spec: want a mapping, got a list`},
		{"rule violation names the field and line", "r.yaml", "type: resource\nkind: g\nkind_version: 1\nname: Not_Valid\n",
			`r.yaml: document 1 (line 4): name: "Not_Valid" must be lower-case letters, digits, '.', '_' or '-', starting and ending with a letter or digit (e.g. web-1)`},
		{"rule violation in a list", "m.yaml", "type: manifest\nkind: greeting\nkind_version: 1\nreactions:\n  - name: a\n    trigger: someday\n    emits: [status]\n",
			`m.yaml: document 1 (line 6): reactions[0].trigger: "someday" is not one of specChange, childrenSettled, deleteRequested, operation, reactor, resync, observe`},
		{"deletion policy outside its list", "r.yaml", "type: resource\nkind: g\nkind_version: 1\nname: a\ndeletion_policy: keep\n",
			`r.yaml: document 1 (line 5): deletion_policy: "keep" is not one of delete, retain (or leave it out for the default)`},
		{"kind deletion policy outside its list", "m.yaml", "type: manifest\nkind: g\nkind_version: 1\npolicy:\n  deletion_policy: Retain\n",
			`m.yaml: document 1 (line 5): policy.deletion_policy: "Retain" is not one of delete, retain (or leave it out for the default)`},
		{"duplicate key", "a.yaml", "type: resource\ntype: manifest\n",
			`a.yaml: document 1 (line 2): duplicate key "type"`},
		{"same field twice by two names", "a.yaml", "type: manifest\nkind: g\nkind_version: 1\nkindVersion: 2\n",
			`a.yaml: document 1 (line 4): field "kindVersion" is given twice (also as "kind_version")`},
		{"yaml syntax", "a.yaml", manifestYAML + "---\nkind: [\n",
			`a.yaml: document 2 (line 16): invalid YAML: did not find expected node content`},
		{"json syntax", "a.json", "{\n\"type\": \"resource\",\n\"kind\": }\n",
			`a.json: document 1 (line 3): invalid JSON: invalid character '}' looking for beginning of value`},
		{"json syntax in an array", "a.json", "[{\"type\": \"manifest\", \"kind\": \"g\", \"kind_version\": 1},\n {\"type\": }]",
			`a.json: document 2 (line 2): invalid JSON: invalid character '}' looking for beginning of value`},
		{"json duplicate", "a.json", `{"type":"resource","type":"manifest"}`,
			`a.json: document 1 (line 1): duplicate key "type"`},
		{"infinite number", "r.yaml", "type: resource\nkind: g\nkind_version: 1\nname: a\nspec: {x: .inf}\n",
			`r.yaml: document 1 (line 5): .inf is not a finite number (JSON has no NaN or infinity; quote it for a string)`},
		{"custom tag", "r.yaml", "type: !widget resource\n",
			`r.yaml: document 1 (line 1): unsupported YAML tag "!widget"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := document.Parse(tc.source, []byte(tc.data))
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if err.Error() != tc.want {
				t.Fatalf("error:\n got: %s\nwant: %s", err, tc.want)
			}
			var de *document.Error
			if !errors.As(err, &de) {
				t.Fatalf("error %T does not hold a *document.Error", err)
			}
		})
	}
}

func TestParseReportsEveryBadDocument(t *testing.T) {
	src := "type: widget\n---\n" + resourceYAML + "---\ntype: resource\nkind: g\nkind_version: 1\nname: a\nnope: 1\n"
	docs, err := document.Parse("all.yaml", []byte(src))
	if len(docs) != 1 {
		t.Errorf("got %d good documents, want 1", len(docs))
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "document 1") || !strings.Contains(lines[1], "document 3 (line 19)") {
		t.Fatalf("errors = %q, want one for document 1 and one for document 3 line 19", lines)
	}
}

func TestParseAliasesAndMerges(t *testing.T) {
	src := `type: resource
kind: g
kind_version: 1
name: a
spec:
  base: &base {size: small, zone: a}
  web:
    <<: *base
    zone: b
  copy: *base
`
	docs, err := document.Parse("a.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	spec := docs[0].Message.(*convergev1.ApplyResourceRequest).Spec
	got, _ := protojson.Marshal(spec)
	want := `{"base":{"size":"small","zone":"a"},"copy":{"size":"small","zone":"a"},"web":{"size":"small","zone":"b"}}`
	if compact(string(got)) != want {
		t.Fatalf("spec = %s, want %s", got, want)
	}
}

func TestParseAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("type: resource\nkind: g\nkind_version: 1\nname: a\nspec:\n  a00: &a00 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("  a" + itoa(i) + ": &a" + itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + itoa(i-1))
		}
		b.WriteString("]\n")
	}
	_, err := document.Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "aliases expand this file to more than") {
		t.Fatalf("err = %v, want the alias budget error", err)
	}
}

func TestParseTooBig(t *testing.T) {
	data := make([]byte, document.MaxFileSize+1)
	_, err := document.Parse("big.yaml", data)
	if err == nil || err.Error() != "big.yaml: larger than the 32 MiB limit per file" {
		t.Fatalf("err = %v", err)
	}
}

func TestParseDeepNesting(t *testing.T) {
	deep := "type: resource\nkind: g\nkind_version: 1\nname: a\nspec: {x: " + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "}\n"
	_, err := document.Parse("deep.yaml", []byte(deep))
	if err == nil || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Fatalf("err = %v, want a nesting error", err)
	}
	deepJSON := `{"type":"resource","spec":{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "}}"
	_, err = document.Parse("deep.json", []byte(deepJSON))
	if err == nil || !strings.Contains(err.Error(), "nesting deeper than") {
		t.Fatalf("err = %v, want a nesting error", err)
	}
}

func compact(s string) string {
	return strings.NewReplacer(" ", "", "\n", "").Replace(s)
}

func itoa(i int) string {
	return string(rune('0'+i/10)) + string(rune('0'+i%10))
}

func TestParseReportsEveryShapeProblemOfADocument(t *testing.T) {
	src := "type: manifest\nkind: greeting\nkind_version: x\nreactions:\n  - name: a\n    emits: status\n  - nme: b\nownr: me\n"
	_, err := document.Parse("m.yaml", []byte(src))
	want := strings.Join([]string{
		`m.yaml: document 1 (line 3): kind_version: want an integer, got "x"`,
		`m.yaml: document 1 (line 6): reactions[0].emits: want a list, got "status"`,
		`m.yaml: document 1 (line 7): reactions[1]: unknown field "nme" (did you mean "name"?)`,
		`m.yaml: document 1 (line 8): unknown field "ownr" (did you mean "owner"?)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("errors:\n%v\nwant:\n%s", err, want)
	}
}

func TestParseDeletionPolicy(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"retain", "deletion_policy: retain\n", "retain"},
		{"delete by its JSON name", "deletionPolicy: delete\n", "delete"},
		{"left out: the kind's policy", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := document.Parse("r.yaml", []byte(resourceYAML+tc.line))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := docs[0].Message.(*convergev1.ApplyResourceRequest).GetDeletionPolicy(); got != tc.want {
				t.Fatalf("deletion_policy = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseManagementPolicyAndImport(t *testing.T) {
	docs, err := document.Parse("r.yaml", []byte(resourceYAML+"management_policy: observe\nimport: {id: vpc-0abc}\n"))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	r := docs[0].Message.(*convergev1.ApplyResourceRequest)
	if r.GetManagementPolicy() != "observe" || r.GetImport().GetId() != "vpc-0abc" {
		t.Fatalf("management_policy %q, import %v", r.GetManagementPolicy(), r.GetImport())
	}
	_, err = document.Parse("r.yaml", []byte(resourceYAML+"management_policy: watch\nimport: {id: \"\"}\n"))
	for _, want := range []string{`management_policy: "watch" is not one of full, observe`, "import.id:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad policy and empty import id: %v; want %q", err, want)
		}
	}
}
