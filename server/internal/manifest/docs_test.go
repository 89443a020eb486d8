package manifest

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// kindsDoc is the authoring guide that documents every rule.
const kindsDoc = "../../../docs/kinds.md"

var (
	ruleHeading = regexp.MustCompile(`(?m)^### (M\d+) — (.+)$`)
	fenced      = regexp.MustCompile("(?s)```(yaml|text)\n(.*?)```")
)

// TestKindsDocExamples keeps docs/kinds.md honest: every rule has a
// section headed by its ID and summary, and each section's example
// manifest produces exactly the error printed under it.
func TestKindsDocExamples(t *testing.T) {
	raw, err := os.ReadFile(kindsDoc)
	if err != nil {
		t.Fatalf("read %s: %v", kindsDoc, err)
	}
	doc := string(raw)

	_, complete, ok := strings.Cut(doc, "## A complete manifest")
	example := fenced.FindStringSubmatch(complete)
	if !ok || example == nil || example[1] != "yaml" {
		t.Fatal(`no yaml block after "## A complete manifest"`)
	}
	if _, err := Compile(yamlManifest(t, example[2])); err != nil {
		t.Errorf("the complete manifest example is illegal:\n%v", err)
	}

	headings := ruleHeading.FindAllStringSubmatchIndex(doc, -1)
	documented := map[Rule]bool{}
	for i, h := range headings {
		rule, summary := Rule(doc[h[2]:h[3]]), doc[h[4]:h[5]]
		documented[rule] = true
		if summary != rule.Summary() {
			t.Errorf("%s heading %q differs from Rule.Summary %q", rule, summary, rule.Summary())
		}
		end := len(doc)
		if i+1 < len(headings) {
			end = headings[i+1][0]
		}
		blocks := fenced.FindAllStringSubmatch(doc[h[1]:end], -1)
		if len(blocks) != 2 || blocks[0][1] != "yaml" || blocks[1][1] != "text" {
			t.Errorf("%s: want one yaml example followed by one text error block", rule)
			continue
		}
		_, err := Compile(yamlManifest(t, blocks[0][2]))
		want := strings.TrimSpace(blocks[1][2])
		if err == nil || err.Error() != want {
			t.Errorf("%s example: Compile error =\n%v\nthe doc says\n%s", rule, err, want)
		}
	}
	for _, r := range Rules() {
		if !documented[r] {
			t.Errorf("rule %s is not documented in %s", r, kindsDoc)
		}
	}
}

func yamlManifest(t *testing.T, src string) *convergev1.KindManifest {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("yaml: %v\n%s", err, src)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("yaml to json: %v", err)
	}
	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal(data, m); err != nil {
		t.Fatalf("protojson: %v\n%s", err, data)
	}
	return m
}
