package compat

import (
	"slices"
	"testing"
)

// The one deliberate exception to soundness: a name the old schema never
// mentioned may be declared. Strict comparisons (tests only) report it.
func TestUndeclaredPropertyException(t *testing.T) {
	old := doc(t, `{"type":"object","properties":{"a":{}}}`)
	new := doc(t, `{"type":"object","properties":{"a":{},"b":{"type":"string"}}}`)
	if got := compareDocs(old, new, options{}); len(got) > 0 {
		t.Errorf("Check reported a new optional property: %q", lines(got))
	}
	want := []string{`/b: retyped: type "string" added: values of any type were accepted @/properties/b/type`}
	if got := lines(compareDocs(old, new, options{strict: true})); !slices.Equal(got, want) {
		t.Errorf("strict comparison:\n got  %q\n want %q", got, want)
	}
}

func TestBudget(t *testing.T) {
	old := doc(t, `{"type":"object","properties":{"a":{"properties":{"b":{"properties":{"c":{"type":"string"}}}}}}}`)
	new := doc(t, `{"type":"object","properties":{"a":{"properties":{"b":{"properties":{"c":{"type":"integer"}}}}}}}`)
	got := compareDocs(old, new, options{steps: 2})
	if len(got) != 1 || got[0].Reason != Unproven || got[0].Path != "" {
		t.Errorf("over budget: got %q, want one Unproven change at the root", lines(got))
	}
	if got := compareDocs(old, new, options{}); len(got) != 1 || got[0].Reason != Retyped {
		t.Errorf("within budget: got %q, want one Retyped change", lines(got))
	}
}

func TestSorted(t *testing.T) {
	in := []Change{
		{Path: "/b", Reason: Retyped},
		{Path: "/a/10", Reason: Removed},
		{Path: "/a/2", Reason: Retyped},
		{Path: "/a/2", Reason: Narrowed},
		{Path: "", Reason: Unproven},
		{Path: "/a/2", Reason: Narrowed},
	}
	var got []string
	for _, c := range sortChanges(in) {
		got = append(got, c.Path+" "+string(c.Reason))
	}
	want := []string{" unproven", "/a/2 narrowed", "/a/2 retyped", "/a/10 removed", "/b retyped"}
	if !slices.Equal(got, want) {
		t.Errorf("sortChanges:\n got  %q\n want %q", got, want)
	}
}

func TestIdenticalDocuments(t *testing.T) {
	s := `{"$defs":{"d":{"$dynamicAnchor":"x","type":"object"}},"$dynamicRef":"#x","properties":{"a":{"anyOf":[{"type":"string"}]}}}`
	if got := run(t, s, s); len(got) > 0 {
		t.Errorf("Check(x, x) = %q, want nothing", lines(got))
	}
}
