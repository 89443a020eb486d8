package stdcel

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// specFieldsPage is the grammar page of spec_fields. Its examples are the
// cases of TestSpecFieldsPage, so the page cannot drift from the parser.
var specFieldsPage = filepath.Join("..", "..", "docs", "spec-fields.md")

// pageExample is one marked example of the page: a YAML block holding
// spec_fields, then the block it must produce.
type pageExample struct {
	line     int    // of the marker, for messages
	kind     string // "schema" (then a JSON Schema) or "problems" (then one problem per line)
	input    string
	expected string
}

// pageExamples reads the examples marked `<!-- spec-fields: schema -->` or
// `<!-- spec-fields: problems -->`: each marker is followed by two fenced
// blocks, the input and what it gives.
func pageExamples(t *testing.T, text string) []pageExample {
	t.Helper()
	var out []pageExample
	var cur *pageExample
	var blocks []string
	var body []string
	inFence := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case inFence && trimmed == "```":
			inFence = false
			if cur != nil {
				blocks = append(blocks, strings.Join(body, "\n"))
				if len(blocks) == 2 {
					cur.input, cur.expected = blocks[0], blocks[1]
					out = append(out, *cur)
					cur, blocks = nil, nil
				}
			}
		case inFence:
			body = append(body, line)
		case strings.HasPrefix(trimmed, "```"):
			inFence, body = true, nil
		case strings.HasPrefix(trimmed, "<!-- spec-fields:"):
			if cur != nil {
				t.Fatalf("%s:%d: a marker before the two blocks of the one at line %d", specFieldsPage, n, cur.line)
			}
			kind := strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(trimmed, "<!-- spec-fields:"), "-->"))
			if kind != "schema" && kind != "problems" {
				t.Fatalf("%s:%d: marker %q: want schema or problems", specFieldsPage, n, kind)
			}
			cur = &pageExample{line: n, kind: kind}
		}
	}
	if cur != nil {
		t.Fatalf("%s:%d: the page ends before the marker's two blocks", specFieldsPage, cur.line)
	}
	return out
}

// TestSpecFieldsPage runs every example of docs/spec-fields.md through the
// parser: a schema example must produce exactly the JSON Schema shown and
// no problem; a problems example must produce exactly the problems shown,
// in order.
func TestSpecFieldsPage(t *testing.T) {
	text, err := os.ReadFile(specFieldsPage)
	if err != nil {
		t.Fatal(err)
	}
	examples := pageExamples(t, string(text))
	kinds := map[string]int{}
	for _, ex := range examples {
		kinds[ex.kind]++
	}
	// A page whose markers were lost would pass with nothing checked.
	if kinds["schema"] < 5 || kinds["problems"] < 3 {
		t.Fatalf("%s: %d schema and %d problems examples; the page documents more than that, so markers went missing", specFieldsPage, kinds["schema"], kinds["problems"])
	}
	for _, ex := range examples {
		var doc struct {
			SpecFields map[string]any `yaml:"spec_fields"`
		}
		if err := yaml.Unmarshal([]byte(ex.input), &doc); err != nil {
			t.Errorf("%s:%d: the example is not YAML: %v", specFieldsPage, ex.line, err)
			continue
		}
		if doc.SpecFields == nil {
			t.Errorf("%s:%d: the example has no spec_fields", specFieldsPage, ex.line)
			continue
		}
		// The graph reaches stdcel as JSON (a protobuf Struct's): decode
		// it as stdworker does, so the values are the types Compile sees.
		raw, err := json.Marshal(map[string]any{"kind": "page", "version": 1, "spec_fields": doc.SpecFields})
		if err != nil {
			t.Fatalf("%s:%d: %v", specFieldsPage, ex.line, err)
		}
		def, err := DecodeDefinition(raw)
		if err != nil {
			t.Fatalf("%s:%d: %v", specFieldsPage, ex.line, err)
		}
		fields := def.SpecFields
		var ps problems
		schema := compactSchema(&ps, "spec_fields", fields)
		var got []string
		for _, p := range ps.list {
			got = append(got, p.String())
		}
		switch ex.kind {
		case "schema":
			if len(got) > 0 {
				t.Errorf("%s:%d: the page says this parses, but:\n%s", specFieldsPage, ex.line, strings.Join(got, "\n"))
				continue
			}
			var want any
			if err := json.Unmarshal([]byte(ex.expected), &want); err != nil {
				t.Errorf("%s:%d: the expected schema is not JSON: %v", specFieldsPage, ex.line, err)
				continue
			}
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var have any
			if err := json.Unmarshal(b, &have); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(have, want) {
				pretty, _ := json.MarshalIndent(have, "", "  ")
				t.Errorf("%s:%d: the schema differs from the page's; the parser gives:\n%s", specFieldsPage, ex.line, pretty)
			}
		case "problems":
			want := strings.Split(strings.TrimSpace(ex.expected), "\n")
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:%d: the problems differ from the page's; the parser gives:\n%s", specFieldsPage, ex.line, strings.Join(got, "\n"))
			}
		}
	}
}

// TestSpecFieldsNotBoth holds the page's rule that a graph gives its spec
// schema one way: spec_fields and spec_schema together are refused.
func TestSpecFieldsNotBoth(t *testing.T) {
	ps := compileProblems(t, `{"kind": "webapp", "version": 1, "spec_fields": {"image": "string"},
		"spec_schema": {"type": "object"},
		"resources": [{"id": "db", "kind": "demo.database", "version": 1, "template": {"spec": {"engine": "pg"}}}]}`)
	want := "spec_fields: set spec_schema or spec_fields, not both"
	for _, p := range ps {
		if p.String() == want {
			return
		}
	}
	t.Errorf("no problem %q; got:\n%s", want, (&CheckError{Problems: ps}).Error())
}
