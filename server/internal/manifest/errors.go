package manifest

import (
	"slices"
	"strconv"
	"strings"
)

// Problem is one way a manifest breaks a rule.
type Problem struct {
	// Field locates the problem, e.g. "reactions[1].emits", "finalizer" or,
	// inside a schema, "spec_schema/properties/x/type".
	Field string
	// Reaction is the name of the reaction Field points into, if any.
	Reaction string
	// Rule is the broken rule's ID, e.g. "M4".
	Rule Rule
	// Message says what is wrong and how to fix it.
	Message string
}

// String renders the problem as
// `reactions[1] "teardown": M4: deleteRequested needs the manifest's finalizer`.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Field)
	if p.Reaction != "" {
		b.WriteString(" ")
		b.WriteString(strconv.Quote(p.Reaction))
	}
	b.WriteString(": ")
	b.WriteString(string(p.Rule))
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// Error is returned by Compile for an illegal manifest. It lists every
// problem found, ordered by field, then rule.
type Error struct {
	Problems []Problem
}

// Error renders one problem per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Has reports whether the error includes a problem with the given rule.
func (e *Error) Has(r Rule) bool {
	return slices.ContainsFunc(e.Problems, func(p Problem) bool { return p.Rule == r })
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := compareFields(a.Field, b.Field); c != 0 {
			return c
		}
		return a.Rule.number() - b.Rule.number()
	})
}

// compareFields orders field paths with indexes compared as numbers, so
// reactions[2] sorts before reactions[10].
func compareFields(a, b string) int {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(na) != len(nb) {
				return len(na) - len(nb)
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digitPrefix(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
