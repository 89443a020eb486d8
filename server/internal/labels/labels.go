// Package labels parses label selectors, the filter language of resource
// lists: comma-separated terms that must all hold.
//
//	key=value   key==value   key!=value
//	key         !key
//	key in (a, b)            key notin (a, b)
//
// A key follows the rule apply enforces on label keys (see keyRule); a
// value is at most as long as a label value and has none of the
// characters the grammar itself uses: = ! , ( ). Spaces around keys,
// operators and values are ignored. No term may be empty, so "a,,b" and
// "a," are refused rather than read as "a,b" and "a".
package labels

import (
	"fmt"
	"strings"
)

// Op is a term's operator.
type Op int

// Operators.
const (
	Equals Op = iota
	NotEquals
	Exists
	NotExists
	In
	NotIn
)

// Term is one condition on one label.
type Term struct {
	Key    string
	Op     Op
	Values []string // one for Equals/NotEquals, one or more for In/NotIn
}

// Selector is a conjunction of terms. The zero value selects everything.
type Selector []Term

// MaxLength bounds a selector string.
const MaxLength = 4096

// Parse reads a selector. The empty string selects everything.
func Parse(s string) (Selector, error) {
	if len(s) > MaxLength {
		return nil, fmt.Errorf("label selector is %d bytes; the limit is %d", len(s), MaxLength)
	}
	parts, err := splitTerms(s)
	if err != nil {
		return nil, err
	}
	var sel Selector
	for _, p := range parts {
		t, err := parseTerm(p)
		if err != nil {
			return nil, fmt.Errorf("label selector term %q: %w", p, err)
		}
		sel = append(sel, t)
	}
	return sel, nil
}

// splitTerms splits on commas outside parentheses.
func splitTerms(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
			if depth > 1 {
				return nil, fmt.Errorf("label selector: nested parentheses at offset %d", i)
			}
		case ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("label selector: unbalanced ')' at offset %d", i)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("label selector: unbalanced '('")
	}
	parts = append(parts, strings.TrimSpace(s[start:]))
	if len(parts) == 1 && parts[0] == "" {
		return nil, nil // an empty selector selects everything
	}
	for i, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("label selector: term %d of %d is empty; write terms separated by single commas, e.g. team=web,tier!=db", i+1, len(parts))
		}
	}
	return parts, nil
}

func parseTerm(p string) (Term, error) {
	switch {
	case strings.HasPrefix(p, "!"):
		key := strings.TrimSpace(p[1:])
		return Term{Key: key, Op: NotExists}, checkKey(key)
	case strings.Contains(p, "!="):
		k, v, _ := strings.Cut(p, "!=")
		return keyValue(k, v, NotEquals)
	case strings.Contains(p, "=="):
		k, v, _ := strings.Cut(p, "==")
		return keyValue(k, v, Equals)
	case strings.Contains(p, "="):
		k, v, _ := strings.Cut(p, "=")
		return keyValue(k, v, Equals)
	}
	if k, rest, ok := cutWord(p, "notin"); ok {
		return setTerm(k, rest, NotIn)
	}
	if k, rest, ok := cutWord(p, "in"); ok {
		return setTerm(k, rest, In)
	}
	return Term{Key: p, Op: Exists}, checkKey(p)
}

// cutWord splits "key word (...)" around a whole-word operator.
func cutWord(p, word string) (string, string, bool) {
	fields := strings.Fields(p)
	if len(fields) < 2 || fields[1] != word && !strings.HasPrefix(fields[1], word+"(") {
		return "", "", false
	}
	// The key is the first field; the operator follows it (the key itself
	// may contain the operator's letters, as in "domain in (a)").
	afterKey := strings.TrimSpace(p)[len(fields[0]):]
	rest := strings.TrimPrefix(strings.TrimSpace(afterKey), word)
	return fields[0], strings.TrimSpace(rest), true
}

func keyValue(k, v string, op Op) (Term, error) {
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if err := checkKey(k); err != nil {
		return Term{}, err
	}
	if strings.Contains(v, "=") {
		return Term{}, fmt.Errorf("one '=' (or '==' or '!=') per term: value %q cannot contain '='", v)
	}
	if err := checkValue(v); err != nil {
		return Term{}, err
	}
	return Term{Key: k, Op: op, Values: []string{v}}, nil
}

func setTerm(k, rest string, op Op) (Term, error) {
	if err := checkKey(k); err != nil {
		return Term{}, err
	}
	if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
		return Term{}, fmt.Errorf("expected a parenthesised list of values, e.g. %s in (a, b)", k)
	}
	var vals []string
	list := strings.TrimSpace(rest[1 : len(rest)-1])
	if list == "" {
		return Term{}, fmt.Errorf("empty value list; name at least one value, e.g. %s in (a)", k)
	}
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			return Term{}, fmt.Errorf("empty value in the list; separate values with single commas, e.g. %s in (a, b)", k)
		}
		if err := checkValue(v); err != nil {
			return Term{}, err
		}
		vals = append(vals, v)
	}
	return Term{Key: k, Op: op, Values: vals}, nil
}
