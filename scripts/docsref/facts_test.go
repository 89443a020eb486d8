package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The tests in this file hold hand-written pages to facts the code owns,
// so that a field, a route or a name added on one side without the other
// fails here instead of leaving a page quietly wrong.

// readDoc returns a page of docs/, relative to it.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the text under the heading whose line is exactly
// heading, up to the next heading of the same or a higher level.
func section(t *testing.T, page, heading string) string {
	t.Helper()
	lines := strings.Split(page, "\n")
	level := strings.Index(heading, " ")
	for i, l := range lines {
		if l != heading {
			continue
		}
		var out []string
		for _, m := range lines[i+1:] {
			if n := strings.Index(m, " "); n > 0 && n <= level && strings.Trim(m[:n], "#") == "" {
				break
			}
			out = append(out, m)
		}
		return strings.Join(out, "\n")
	}
	t.Fatalf("no heading %q", heading)
	return ""
}

// tableColumn returns the first cell of each body row of the first
// Markdown table in text, with backquotes removed.
func tableColumn(text string) []string {
	var cells []string
	inTable := false
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable {
			inTable = true
			continue // the header row
		}
		first := strings.TrimSpace(strings.SplitN(l[1:], "|", 2)[0])
		if strings.Trim(first, "-: ") == "" {
			continue // the delimiter row
		}
		cells = append(cells, strings.Trim(first, "`"))
	}
	return cells
}

// compareSets reports every name one side has and the other lacks.
func compareSets(t *testing.T, what string, code, page []string, codeSide, pageSide string) {
	t.Helper()
	in := func(list []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range list {
			m[s] = true
		}
		return m
	}
	c, p := in(code), in(page)
	var missing, extra []string
	for s := range c {
		if !p[s] {
			missing = append(missing, s)
		}
	}
	for s := range p {
		if !c[s] {
			extra = append(extra, s)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("%s: %s has %s but %s does not", what, codeSide, strings.Join(missing, ", "), pageSide)
	}
	if len(extra) > 0 {
		t.Errorf("%s: %s names %s but %s has no such thing", what, pageSide, strings.Join(extra, ", "), codeSide)
	}
	if len(c) == 0 || len(p) == 0 {
		t.Errorf("%s: found %d in %s and %d in %s; the parser is broken", what, len(c), codeSide, len(p), pageSide)
	}
}

// TestKindsPolicyTableMatchesProto holds the policy table of kinds.md to
// the KindPolicy message: every field documented, no field invented.
func TestKindsPolicyTableMatchesProto(t *testing.T) {
	fields := (&convergev1.KindPolicy{}).ProtoReflect().Descriptor().Fields()
	var code []string
	for i := range fields.Len() {
		code = append(code, string(fields.Get(i).Name()))
	}
	page := tableColumn(section(t, readDoc(t, "kinds.md"), "### `policy`"))
	compareSets(t, "KindPolicy fields", code, page, "the KindPolicy message", "the policy table of docs/kinds.md")
}

func TestTableColumnReadsFirstCells(t *testing.T) {
	text := "intro\n\n| field | x |\n|---|---|\n| `a` | 1 |\n| b | 2 |\n\nafter\n| c | 3 |\n"
	if got := strings.Join(tableColumn(text), " "); got != "a b" {
		t.Fatalf("tableColumn = %q, want \"a b\"", got)
	}
}

// TestAPIRouteTableMatchesOpenAPI holds the REST route table of api.md
// to the OpenAPI document the REST gateway serves: every route the
// server has is in the table, and the table names no route it lacks.
func TestAPIRouteTableMatchesOpenAPI(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", openAPIPath))
	if err != nil {
		t.Fatal(err)
	}
	var doc openAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var code []string
	for path, ops := range doc.Paths {
		for method := range ops {
			code = append(code, strings.ToUpper(method)+" "+path)
		}
	}
	var page []string
	for _, cell := range tableColumn(section(t, readDoc(t, "api.md"), "## REST routes")) {
		page = append(page, routeOf(cell))
	}
	compareSets(t, "REST routes", code, page, openAPIPath, "the route table of docs/api.md")
}

// routeOf reads "METHOD /path" out of a route cell such as
// "POST /api/v1/kinds` (body: the manifest)" or
// "GET /api/v1/kinds[?kind=K]" (tableColumn has trimmed the outer
// backquotes): the text up to a closing backquote, without the query.
func routeOf(cell string) string {
	route, _, _ := strings.Cut(cell, "`")
	route, _, _ = strings.Cut(route, "[?")
	return strings.TrimSpace(route)
}

func TestRouteOf(t *testing.T) {
	for cell, want := range map[string]string{
		"POST /api/v1/kinds` (body: the manifest)": "POST /api/v1/kinds",
		"GET /api/v1/kinds[?kind=K]":               "GET /api/v1/kinds",
		"DELETE /api/v1/reactorbindings/{name}":    "DELETE /api/v1/reactorbindings/{name}",
	} {
		if got := routeOf(cell); got != want {
			t.Errorf("routeOf(%q) = %q, want %q", cell, got, want)
		}
	}
}
