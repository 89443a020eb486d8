package compat

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// docExamples are the examples of docs/stability.md: each old/new
// spec_schema pair and the exact line the user sees, which the document
// must quote verbatim.
var docExamples = []struct{ old, new, line string }{
	{`{"type":"object","properties":{"size":{"type":"integer"},"debug":{"type":"boolean"}},"additionalProperties":false}`,
		`{"type":"object","properties":{"size":{"type":"integer"}},"additionalProperties":false}`,
		`spec_schema /debug: removed: property "debug" was removed and additionalProperties is false`},
	{`{"type":"object","properties":{"size":{"type":["integer","string"]}}}`,
		`{"type":"object","properties":{"size":{"type":"integer"}}}`,
		`spec_schema /size: retyped: type was ["integer","string"], now "integer"`},
	{`{"type":"object","properties":{"replicas":{"type":"integer","minimum":1,"maximum":9}}}`,
		`{"type":"object","properties":{"replicas":{"type":"integer","minimum":3,"maximum":9}}}`,
		`spec_schema /replicas: narrowed: minimum was 1, now 3`},
	{`{"type":"object","properties":{"owner":{"type":"string"}}}`,
		`{"type":"object","properties":{"owner":{"type":"string"}},"required":["owner"]}`,
		`spec_schema /owner: newly-required: "owner" is now required`},
	{`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"object","properties":{"protocol":{"enum":["TCP","UDP","SCTP"]}}}}}}`,
		`{"type":"object","properties":{"ports":{"type":"array","items":{"type":"object","properties":{"protocol":{"enum":["TCP","UDP"]}}}}}}`,
		`spec_schema /ports/*/protocol: enum-restricted: enum was ["TCP","UDP","SCTP"], now ["TCP","UDP"]: "SCTP" no longer accepted`},
	{`{"type":"object","properties":{"name":{"type":"string"}}}`,
		`{"type":"object","properties":{"name":{"type":"string","pattern":"^[a-z][a-z0-9-]*$"}}}`,
		`spec_schema /name: pattern-added: pattern "^[a-z][a-z0-9-]*$" added`},
	{`{"type":"object","properties":{"contact":{"type":"string"}}}`,
		`{"type":"object","properties":{"contact":{"type":"string","format":"email"}}}`,
		`spec_schema /contact: format-added: format "email" added`},
	{`{"type":"object","properties":{"labels":{"type":"object"}}}`,
		`{"type":"object","properties":{"labels":{"type":"object","additionalProperties":{"type":"string"}}}}`,
		`spec_schema /labels/*: additional-properties: additionalProperties was absent, now {"type":"string"}`},
	{`{"type":"object","properties":{"zones":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{"zones":{"type":"array","items":{"type":"string"},"uniqueItems":true}}}`,
		`spec_schema /zones: unique-items: uniqueItems added: arrays with repeated items are no longer accepted`},
	{`{"type":"object","properties":{"size":{"type":"integer"}}}`,
		`{"type":"object","properties":{"size":{"anyOf":[{"type":"integer","maximum":100},{"type":"string"}]}}}`,
		`spec_schema /size: narrowed: maximum 100 added`},
	{`{"type":"object","properties":{"role":{"type":"string"}}}`,
		`{"type":"object","properties":{"role":{"type":"string","not":{"const":"root"}}}}`,
		`spec_schema /role: unproven: not: cannot prove that no value the old schema accepted matches the "not" schema`},
}

func TestDocExamples(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "stability.md"))
	if err != nil {
		t.Fatalf("docs/stability.md: %v", err)
	}
	for _, ex := range docExamples {
		cs := run(t, ex.old, ex.new)
		var got []string
		for _, c := range cs {
			c.Field = "spec_schema"
			got = append(got, c.String())
		}
		if !slices.Equal(got, []string{ex.line}) {
			t.Errorf("Check(%s, %s):\n got  %q\n want %q", ex.old, ex.new, got, ex.line)
		}
		if !strings.Contains(string(text), ex.line) {
			t.Errorf("docs/stability.md does not quote %q", ex.line)
		}
	}
}
