package store

import "strings"

// Visible limits a read to what one caller may see (authz.Scope, as the
// API hands it down). A nil *Visible sees everything, and the queries then
// carry no predicate at all, so callers who may read everything run the
// same SQL as without authorization.
type Visible struct {
	// Namespaces are patterns: exact names, or prefixes with a trailing "*".
	Namespaces []string
	// Kinds are kinds seen in every namespace (the caller's team owns them).
	Kinds []string
}

// visibleClause is the one SQL form of namespace visibility, used by every
// query that lists resources or what belongs to them (lists, counts,
// events, the change feed): it returns "" for nil v, else a predicate over
// the namespace column nsCol and the kind column kindCol, with its values
// passed through arg. A Visible with no pattern and no kind sees nothing
// (FALSE), never everything.
func visibleClause(v *Visible, nsCol, kindCol string, arg func(any) string) string {
	if v == nil {
		return ""
	}
	var terms []string
	if len(v.Namespaces) > 0 {
		terms = append(terms, nsCol+" LIKE ANY("+arg(likePatterns(v.Namespaces))+"::text[])")
	}
	if len(v.Kinds) > 0 {
		terms = append(terms, kindCol+" = ANY("+arg(v.Kinds)+"::text[])")
	}
	if len(terms) == 0 {
		return "FALSE"
	}
	return "(" + strings.Join(terms, " OR ") + ")"
}

// likePatterns turns namespace patterns into LIKE patterns: the name part
// is matched literally (its '\', '%' and '_' escaped with LIKE's default
// escape character '\'), and a trailing '*' becomes '%'.
func likePatterns(patterns []string) []string {
	esc := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	out := make([]string, len(patterns))
	for i, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			out[i] = esc.Replace(prefix) + "%"
		} else {
			out[i] = esc.Replace(p)
		}
	}
	return out
}
