package stdcel

import (
	"fmt"
	"strings"
)

// segment is one piece of a template string: literal text, or the source
// of a `${...}` expression.
type segment struct {
	text   string
	isExpr bool
}

// maxTemplateLength bounds one template string, so a hostile graph cannot
// make the parser or the checker work without end.
const maxTemplateLength = 16 << 10

// parseTemplate splits s into literal text and `${...}` expressions. `$${`
// stands for a literal `${`. Inside an expression, braces nest and string
// literals (single, double, triple-quoted, raw) may hold any character, so
// `${ {"a": "}"}.a }` is one expression. A string with no `${` is one
// literal segment (or none when empty).
func parseTemplate(s string) ([]segment, error) {
	if len(s) > maxTemplateLength {
		return nil, fmt.Errorf("the string is %d bytes; a template string is at most %d", len(s), maxTemplateLength)
	}
	var out []segment
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, segment{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := exprEnd(s, i+2)
			if err != nil {
				return nil, err
			}
			src := s[i+2 : end]
			if strings.TrimSpace(src) == "" {
				return nil, fmt.Errorf("the expression at offset %d is empty", i)
			}
			flush()
			out = append(out, segment{text: src, isExpr: true})
			i = end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	flush()
	return out, nil
}

// exprEnd returns the index of the `}` closing the expression that starts
// at s[start:].
func exprEnd(s string, start int) (int, error) {
	depth := 0
	for i := start; i < len(s); {
		c := s[i]
		switch {
		case c == '{':
			depth++
			i++
		case c == '}':
			if depth == 0 {
				return i, nil
			}
			depth--
			i++
		case c == '"' || c == '\'':
			raw := i > start && (s[i-1] == 'r' || s[i-1] == 'R') && (i-1 == start || !isIdentByte(s[i-2]))
			next, err := skipString(s, i, raw)
			if err != nil {
				return 0, err
			}
			i = next
		default:
			i++
		}
	}
	return 0, fmt.Errorf("the expression starting at offset %d has no closing '}'", start-2)
}

// skipString returns the index just past the CEL string literal opening
// at s[i].
func skipString(s string, i int, raw bool) (int, error) {
	q := s[i]
	delim := string(q)
	if strings.HasPrefix(s[i:], strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	for j := i + len(delim); j < len(s); {
		switch {
		case !raw && s[j] == '\\':
			j += 2
		case strings.HasPrefix(s[j:], delim):
			return j + len(delim), nil
		case len(delim) == 1 && (s[j] == '\n' || s[j] == '\r'):
			return 0, fmt.Errorf("the string literal at offset %d ends at a line break", i)
		default:
			j++
		}
	}
	return 0, fmt.Errorf("the string literal at offset %d is not closed", i)
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// hasExpr reports whether s holds a `${` that starts an expression.
func hasExpr(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, "$${", ""), "${")
}
