package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/convergehq/converge/server/internal/catalog"
)

func TestProblemString(t *testing.T) {
	for _, tc := range []struct {
		p    catalog.Problem
		want string
	}{
		{catalog.Problem{File: "c/a/OWNERS", Rule: catalog.RuleOwners, Message: "missing"}, "c/a/OWNERS: missing (C8)"},
		{catalog.Problem{File: "c/a/k/v1.yaml", Line: 4, Path: "owner", Rule: catalog.RuleOwner, Message: "is x"}, "c/a/k/v1.yaml:4: owner: is x (C10)"},
		{catalog.Problem{File: "c/a/k/v1.yaml", Line: 2, Rule: catalog.RulePlacement, Message: "bad"}, "c/a/k/v1.yaml:2: bad (C11)"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestLineOf(t *testing.T) {
	fsys := fstest.MapFS{"c/a/k/examples/x.yaml": {Data: []byte(`type: resource
kind: k
kind_version: 1
name: x
spec:
  list:
    - name: first
      value: 1
    - name: second
      "odd key": 2
  kindVersion: 3
`)}}
	c, err := catalog.Load(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Teams[0].Kinds[0].Examples[0]
	for path, want := range map[string]int{
		"":                        1,
		"spec":                    5,
		"spec.list[1]":            9,
		"spec.list[second]":       9,
		`spec.list[1]["odd key"]`: 10,
		"spec/list/0/value":       8,
		"spec.list[7].value":      6, // as far as the document has it
		"spec.kind_version":       11,
		"nope.deeper":             1,
	} {
		if got := d.LineOf(path); got != want {
			t.Errorf("LineOf(%q) = %d, want %d", path, got, want)
		}
	}
}

func TestWithSourceDir(t *testing.T) {
	dir := filepath.Join("testdata", "owner-mismatch", "catalog")
	c, err := catalog.Load(os.DirFS(dir), ".", catalog.WithSourceDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	ps := c.Check(context.Background(), nil)
	want := filepath.Join(dir, "acme", "web", "v1.yaml") + `:5: owner: is "converge" but the kind is in team acme's directory: owner is the team (C10)`
	if len(ps) != 1 || ps[0].String() != want {
		t.Fatalf("got %v, want [%s]", ps, want)
	}
}

func TestLoadMissingRoot(t *testing.T) {
	_, err := catalog.Load(fstest.MapFS{}, "catalog")
	if err == nil || err.Error() != "catalog catalog: file does not exist" {
		t.Fatalf("got %v", err)
	}
}

func TestStats(t *testing.T) {
	c, err := catalog.Load(os.DirFS(filepath.Join("testdata", "good")), "catalog")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Stats(), (catalog.Stats{Teams: 2, Kinds: 4, Versions: 5, Examples: 3}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func Example() {
	fsys := fstest.MapFS{
		"catalog/acme/OWNERS": {Data: []byte("@alice\n")},
		"catalog/acme/greeting/v1.yaml": {Data: []byte(`type: manifest
kind: greeting
kind_version: 1
owner: web
spec_schema: {type: object}
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
`)},
	}
	c, err := catalog.Load(fsys, "catalog")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range c.Check(context.Background(), nil) {
		fmt.Println(p)
	}
	// Output:
	// catalog/acme/greeting/README.md: missing: every kind directory has a README.md saying what the kind is, its spec, its status and how it is served (C11)
	// catalog/acme/greeting/v1.yaml:4: owner: is "web" but the kind is in team acme's directory: owner is the team (C10)
}
