package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
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

// internalRef matches the project's internal references: requirement
// ids and issue numbers (issue 10, issue-10, issues 3). Readers of
// the site have neither the requirements nor the tracker; a page says what
// a rule is instead of citing it.
var internalRef = regexp.MustCompile(`\bR-[0-9]+\b|(?i)\bissues?[ -]#?[0-9]+\b`)

// internalRefAllowed lists "page:match" pairs that may stay, each with
// the reason. Keep it short: a page that needs one is usually better
// without it.
var internalRefAllowed = map[string]string{}

// TestDocsCiteNoInternalIDs fails on an internal rule id or issue number
// in any page of the site.
func TestDocsCiteNoInternalIDs(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := filepath.Glob(filepath.Join("..", "..", "docs", "reference", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, ref...)
	if len(pages) < 10 {
		t.Fatalf("found %d pages under docs/; the glob is wrong", len(pages))
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(filepath.Join("..", "..", "docs"), p)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range internalRef.FindAllString(line, -1) {
				if _, ok := internalRefAllowed[filepath.ToSlash(name)+":"+m]; ok {
					continue
				}
				t.Errorf("docs/%s:%d cites %q: say what the rule or the change is instead (or allow it in internalRefAllowed, with a reason)", filepath.ToSlash(name), i+1, m)
			}
		}
	}
}

func TestInternalRefMatches(t *testing.T) {
	for s, want := range map[string]bool{
		"validated (R-2), so": true, "rule R-16,": true, "issue 10's targets": true, "Issue 10's": true,
		"(issue 3)": true, "every issue-10 target": true, "issues #24": true,
		"Tier-0 table": false, "c-01137": false, "an issue of taste": false, "BR-2": false, "(#2555)": false,
	} {
		if got := internalRef.MatchString(s); got != want {
			t.Errorf("internalRef.MatchString(%q) = %v, want %v", s, got, want)
		}
	}
}
