package catalog

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LineOf returns the line of the value at path in the document, following
// path as far as the document has it: the line of the deepest part present,
// or the document's line. A path is field names joined by '.', indexes in
// brackets ([2], ["odd key"], or [NAME] for the list item whose name or
// verb is NAME) and, after a '/', a JSON pointer (as in manifest problems:
// "spec_schema/properties/port/type"). Field names match by their proto or
// JSON (lowerCamelCase) spelling.
func (d *Doc) LineOf(path string) int {
	if d == nil {
		return 0
	}
	n := d.node
	line := d.Line
	for _, tok := range splitPath(path) {
		if n == nil {
			break
		}
		next, at := step(n, tok)
		if next == nil {
			break
		}
		n, line = next, at
	}
	return line
}

// token is one step of a path: a key (a field, a pointer token or a
// quoted key), an index, or a name looked up in a list.
type token struct {
	key   string
	index int // -1 unless an index
	named bool
}

// splitPath cuts a path into tokens.
func splitPath(p string) []token {
	var out []token
	pointer := false
	for p != "" {
		switch {
		case pointer || p[0] == '/':
			if p[0] == '/' {
				p = p[1:]
			}
			pointer = true
			end := strings.IndexByte(p, '/')
			if end < 0 {
				end = len(p)
			}
			raw := strings.ReplaceAll(strings.ReplaceAll(p[:end], "~1", "/"), "~0", "~")
			p = p[end:]
			if i, err := strconv.Atoi(raw); err == nil && i >= 0 {
				out = append(out, token{key: raw, index: i})
			} else {
				out = append(out, token{key: raw, index: -1})
			}
		case p[0] == '.':
			p = p[1:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if strings.HasPrefix(p, `["`) {
				if q, rest, ok := quoted(p[1:]); ok && strings.HasPrefix(rest, "]") {
					out = append(out, token{key: q, index: -1})
					p = rest[1:]
					continue
				}
			}
			if end < 0 {
				return out
			}
			in := p[1:end]
			p = p[end+1:]
			if i, err := strconv.Atoi(in); err == nil && i >= 0 {
				out = append(out, token{index: i})
			} else {
				out = append(out, token{key: in, index: -1, named: true})
			}
		default:
			end := strings.IndexAny(p, ".[/")
			if end < 0 {
				end = len(p)
			}
			out = append(out, token{key: p[:end], index: -1})
			p = p[end:]
		}
	}
	return out
}

// quoted reads a Go-quoted string at the start of s.
func quoted(s string) (string, string, bool) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			q, err := strconv.Unquote(s[:i+1])
			return q, s[i+1:], err == nil
		}
	}
	return "", "", false
}

// step follows one token from n, returning the value and the line to
// report for it (a mapping entry's key line).
func step(n *yaml.Node, tok token) (*yaml.Node, int) {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		if tok.index >= 0 && tok.key == "" {
			return nil, 0
		}
		for _, key := range []string{tok.key, lowerCamel(tok.key)} {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					return n.Content[i+1], n.Content[i].Line
				}
			}
		}
	case yaml.SequenceNode:
		if tok.index >= 0 && tok.index < len(n.Content) {
			return n.Content[tok.index], n.Content[tok.index].Line
		}
		if tok.named {
			for _, item := range n.Content {
				for _, field := range []string{"name", "verb"} {
					if v, _ := step(item, token{key: field, index: -1}); v != nil && deref(v).Value == tok.key {
						return item, item.Line
					}
				}
			}
		}
	}
	return nil, 0
}

// deref follows aliases, a bounded number of times.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 100 && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// lowerCamel is protoc's JSON name of a snake_case field.
func lowerCamel(s string) string {
	var b strings.Builder
	up := false
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up && 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}
