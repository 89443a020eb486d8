package flow

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/convergehq/converge/server/internal/schema"
)

// Pointer is a parsed RFC 6901 JSON pointer. The zero Pointer is the root
// ("", the whole document). A Pointer is immutable and safe to share.
type Pointer struct {
	tokens []string // unescaped reference tokens
	text   string   // the pointer as written, escapes included
}

// ParsePointer parses an RFC 6901 JSON pointer: "" (the whole document) or
// a sequence of "/"-prefixed reference tokens in which "~0" stands for "~"
// and "~1" for "/". The pointer must be valid UTF-8.
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return Pointer{}, fmt.Errorf("pointer %q must start with \"/\" (or be \"\" for the whole document)", s)
	}
	if !utf8.ValidString(s) {
		return Pointer{}, fmt.Errorf("pointer %q is not valid UTF-8", s)
	}
	tokens := strings.Split(s[1:], "/")
	offset := 1
	for i, t := range tokens {
		if strings.IndexByte(t, '~') >= 0 {
			u, bad := schema.UnescapeToken(t)
			if bad >= 0 {
				seq := "~"
				if bad+1 < len(t) {
					r, _ := utf8.DecodeRuneInString(t[bad+1:])
					seq += string(r)
				}
				return Pointer{}, fmt.Errorf("pointer %q: %q at byte %d is not an escape; write \"~0\" for \"~\" and \"~1\" for \"/\"", s, seq, offset+bad)
			}
			tokens[i] = u
		}
		offset += len(t) + 1
	}
	return Pointer{tokens: tokens, text: s}, nil
}

// String returns the pointer as written, e.g. "/a~1b/0".
func (p Pointer) String() string {
	return p.text
}

// prefix renders the first n tokens as a pointer, for messages.
func (p Pointer) prefix(n int) string {
	return schema.JoinPointer("", p.tokens[:n]...)
}

// Get returns the value p points to in doc, a decoded JSON document made
// of map[string]any, []any, string, float64 or json.Number, bool and nil.
// It reports false when there is no such value: a missing key, an index
// past the end (or "-"), or a step into a value that is not an object or
// array. A present null is found: Get returns (nil, true).
func (p Pointer) Get(doc any) (any, bool) {
	cur := doc
	for _, t := range p.tokens {
		switch node := cur.(type) {
		case map[string]any:
			v, ok := node[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, ok := arrayIndex(t)
			if !ok || i >= len(node) {
				return nil, false
			}
			cur = node[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// arrayIndex parses an RFC 6901 array index: "0" or digits without a
// leading zero. Indexes too large for an int are not indexes of any array.
func arrayIndex(t string) (int, bool) {
	if t == "" || len(t) > 1 && t[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(t)
	return n, err == nil
}

// Set returns a document equal to doc with v at p. It never modifies doc:
// every object and array along the path is copied, and the rest of the
// result is shared with doc, so treat both as read-only afterwards.
//
// Missing objects along the path are created, and so are objects in place
// of nulls. An array step must name an existing index or be "-", which
// appends. Setting the root ("") returns v. The error names the pointer
// and the step that cannot be taken.
func (p Pointer) Set(doc any, v any) (any, error) {
	return p.setAt(doc, 0, v)
}

func (p Pointer) setAt(node any, i int, v any) (any, error) {
	if i == len(p.tokens) {
		return v, nil
	}
	t := p.tokens[i]
	switch n := node.(type) {
	case nil:
		child, err := p.setAt(nil, i+1, v)
		if err != nil {
			return nil, err
		}
		return map[string]any{t: child}, nil
	case map[string]any:
		child, err := p.setAt(n[t], i+1, v)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(n)+1)
		for k, e := range n {
			out[k] = e
		}
		out[t] = child
		return out, nil
	case []any:
		idx := len(n)
		if t != "-" {
			var ok bool
			idx, ok = arrayIndex(t)
			if !ok {
				return nil, fmt.Errorf("pointer %q: %s is an array and %q is not an index (want 0, 1, ... or \"-\" to append)", p.text, schema.DisplayPointer(p.prefix(i)), t)
			}
			if idx >= len(n) {
				return nil, fmt.Errorf("pointer %q: index %d is past the end of %s (length %d); use \"-\" to append", p.text, idx, schema.DisplayPointer(p.prefix(i)), len(n))
			}
		}
		var cur any
		if idx < len(n) {
			cur = n[idx]
		}
		child, err := p.setAt(cur, i+1, v)
		if err != nil {
			return nil, err
		}
		out := make([]any, len(n), len(n)+1)
		copy(out, n)
		if idx == len(n) {
			return append(out, child), nil
		}
		out[idx] = child
		return out, nil
	default:
		return nil, fmt.Errorf("pointer %q: cannot step into %s: it is %s, not an object or array", p.text, schema.DisplayPointer(p.prefix(i)), describe(node))
	}
}

// describe names the JSON type of a decoded value, with an article.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "a number"
	}
	return fmt.Sprintf("a Go %T (not a JSON value)", v)
}
