package schema

import (
	"strconv"
	"strings"
)

// JoinPointer appends reference tokens to the JSON pointer ptr (RFC 6901),
// escaping each: JoinPointer("/a", "b/c", "0") is "/a/b~1c/0", and
// JoinPointer("") is the root, "".
func JoinPointer(ptr string, tokens ...string) string {
	var b strings.Builder
	b.WriteString(ptr)
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(EscapeToken(t))
	}
	return b.String()
}

// EscapeToken writes a reference token for a JSON pointer: "~" as "~0"
// and "/" as "~1".
func EscapeToken(t string) string {
	t = strings.ReplaceAll(t, "~", "~0")
	return strings.ReplaceAll(t, "/", "~1")
}

// UnescapeToken reads a reference token of a JSON pointer, decoding "~0"
// to "~" and "~1" to "/". bad is the byte offset in t of the first "~"
// that starts neither escape, or -1; such a "~" is kept as written, so a
// caller that has already checked the pointer may ignore bad.
func UnescapeToken(t string) (token string, bad int) {
	bad = -1
	if strings.IndexByte(t, '~') < 0 {
		return t, bad
	}
	var b strings.Builder
	b.Grow(len(t))
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c == '~' && i+1 < len(t) && (t[i+1] == '0' || t[i+1] == '1') {
			if t[i+1] == '1' {
				c = '/'
			}
			i++
		} else if c == '~' && bad < 0 {
			bad = i
		}
		b.WriteByte(c)
	}
	return b.String(), bad
}

// DisplayPointer renders a JSON pointer for people: the root, "", is
// shown as "/".
func DisplayPointer(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// ComparePointers orders JSON pointers token by token. Tokens made only
// of digits (array indexes, or property names that look like them)
// compare by numeric value, so /items/2 sorts before /items/10, then as
// text ("01" before "1"); other tokens compare as text.
func ComparePointers(a, b string) int {
	ta, tb := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(ta) && i < len(tb); i++ {
		if c := compareTokens(ta[i], tb[i]); c != 0 {
			return c
		}
	}
	return len(ta) - len(tb)
}

func compareTokens(a, b string) int {
	if isDigits(a) && isDigits(b) {
		na, nb := strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(na) != len(nb) {
			return len(na) - len(nb)
		}
		if c := strings.Compare(na, nb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

func isDigits(t string) bool {
	return t != "" && skipDigits(t, 0) == len(t)
}

// ValueAt returns the value at the JSON pointer ptr in doc, a decoded
// JSON document. ok is false when there is none: ptr is neither "" nor
// starts with "/", a key is missing, an index is not one of the array's,
// or a step leads into a value that is neither an object nor an array.
func ValueAt(doc any, ptr string) (v any, ok bool) {
	if ptr == "" {
		return doc, true
	}
	if ptr[0] != '/' {
		return nil, false
	}
	v = doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok, _ = UnescapeToken(tok)
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}
