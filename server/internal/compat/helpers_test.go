package compat

import (
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

// doc decodes a JSON schema document for a test, failing it on bad JSON.
func doc(t testing.TB, s string) any {
	t.Helper()
	v, err := schema.Decode([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

// run checks old against new and fails the test on an error.
func run(t testing.TB, old, new string) []Change {
	t.Helper()
	cs, err := Check(doc(t, old), doc(t, new))
	if err != nil {
		t.Fatalf("Check(%s, %s): %v", old, new, err)
	}
	return cs
}

func lines(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String() + " @" + c.Schema
	}
	return out
}

// validates reports whether the validator accepts a value under a schema.
func validates(t testing.TB, s string, v any) bool {
	t.Helper()
	sch, err := schema.Compile("test", doc(t, s))
	if err != nil {
		t.Fatalf("compile %s: %v", s, err)
	}
	return sch.Validate(v) == nil
}
