package schema

import (
	"strconv"
	"strings"
)

// SecretKeyword marks a property secret, as writeOnly: true does.
const SecretKeyword = "x-converge-secret"

// AnyToken stands, in a SecretPath, for every item of an array or every
// value of an object's additional or pattern properties. It is not a
// token a JSON pointer can spell, so it never meets a real property name.
const AnyToken = "\x00*"

// SecretPath is where a secret value sits in a document described by a
// schema: property names and AnyToken. Everything at and under it is
// secret.
type SecretPath []string

// String renders the path as a JSON pointer, "*" standing for AnyToken.
func (p SecretPath) String() string {
	parts := make([]string, len(p))
	for i, t := range p {
		if t == AnyToken {
			parts[i] = "*"
		} else {
			parts[i] = EscapeToken(t)
		}
	}
	return "/" + strings.Join(parts, "/")
}

// Covers reports whether the document location tokens is at or under p.
func (p SecretPath) Covers(tokens []string) bool {
	if len(tokens) < len(p) {
		return false
	}
	for i, t := range p {
		if t != AnyToken && t != tokens[i] {
			return false
		}
	}
	return true
}

// Overlaps reports whether p and the location tokens are on one branch:
// tokens is at, under or above p. A value read at tokens holds a secret
// when it overlaps one.
func (p SecretPath) Overlaps(tokens []string) bool {
	n := min(len(p), len(tokens))
	for i := 0; i < n; i++ {
		if p[i] != AnyToken && tokens[i] != AnyToken && p[i] != tokens[i] {
			return false
		}
	}
	return true
}

// secretScan finds a normalized schema's secret properties: where in the
// described document they sit, and the schema locations of those that
// also set default or examples (which would publish the value).
type secretScan struct {
	root     any
	paths    []SecretPath
	leaky    []string
	visiting map[string]bool
}

func scanSecrets(doc any) ([]SecretPath, []string) {
	s := &secretScan{root: doc, visiting: map[string]bool{}}
	s.visit(doc, nil, nil)
	return s.paths, s.leaky
}

func isSecret(obj map[string]any) bool {
	return obj["writeOnly"] == true || obj[SecretKeyword] == true
}

// visit walks the subschemas that describe the value at data (a location
// in the document), at schema location at.
func (s *secretScan) visit(v any, at, data []string) {
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	if isSecret(obj) {
		for _, kw := range []string{"default", "examples", "const", "enum"} {
			if _, set := obj[kw]; set {
				s.leaky = append(s.leaky, JoinPointer("", child(at, kw)...))
			}
		}
		s.add(data)
		return // everything under a secret is secret
	}
	if ref, ok := obj["$ref"].(string); ok {
		s.follow(ref, data)
	}
	if props, ok := obj["properties"].(map[string]any); ok {
		for name, sub := range props {
			s.visit(sub, child(child(at, "properties"), name), child(data, name))
		}
	}
	if pats, ok := obj["patternProperties"].(map[string]any); ok {
		for name, sub := range pats {
			s.visit(sub, child(child(at, "patternProperties"), name), child(data, AnyToken))
		}
	}
	for _, kw := range []string{"additionalProperties", "unevaluatedProperties", "items", "additionalItems", "unevaluatedItems"} {
		if sub, ok := obj[kw]; ok {
			if list, isList := sub.([]any); isList {
				for i, item := range list {
					s.visit(item, child(child(at, kw), strconv.Itoa(i)), child(data, AnyToken))
				}
				continue
			}
			s.visit(sub, child(at, kw), child(data, AnyToken))
		}
	}
	if list, ok := obj["prefixItems"].([]any); ok {
		for i, item := range list {
			s.visit(item, child(child(at, "prefixItems"), strconv.Itoa(i)), child(data, AnyToken))
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := obj[kw].([]any); ok {
			for i, item := range list {
				s.visit(item, child(child(at, kw), strconv.Itoa(i)), data)
			}
		}
	}
	for _, kw := range []string{"then", "else"} {
		if sub, ok := obj[kw]; ok {
			s.visit(sub, child(at, kw), data)
		}
	}
}

// follow visits a reference into the document ("#/$defs/x"); a reference
// being followed already (a recursive schema) is not followed again.
func (s *secretScan) follow(ref string, data []string) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || s.visiting[ptr] || len(data) > MaxDepth {
		return
	}
	target, ok := ValueAt(s.root, ptr)
	if !ok {
		return
	}
	s.visiting[ptr] = true
	// A referenced subschema is reported where it is defined.
	var at []string
	for _, t := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if t != "" {
			tok, _ := UnescapeToken(t)
			at = append(at, tok)
		}
	}
	s.visit(target, at, data)
	delete(s.visiting, ptr)
}

func (s *secretScan) add(data []string) {
	p := SecretPath(append([]string(nil), data...))
	for _, q := range s.paths {
		if q.Covers(p) {
			return
		}
	}
	kept := s.paths[:0]
	for _, q := range s.paths {
		if !p.Covers(q) {
			kept = append(kept, q)
		}
	}
	s.paths = append(kept, p)
}

// Secrets returns where the schema's secret properties (writeOnly: true
// or x-converge-secret: true) sit in a document it describes. A nil
// schema has none.
func (s *Schema) Secrets() []SecretPath {
	if s == nil {
		return nil
	}
	return s.secrets
}

// LeakySecrets returns the schema locations of secret properties that
// also set default, examples, const or enum: each would publish a value
// of the secret in the schema itself.
func (s *Schema) LeakySecrets() []string {
	if s == nil {
		return nil
	}
	return s.leaky
}

// IsSecret reports whether the document location tokens is at or under
// one of the schema's secret properties.
func (s *Schema) IsSecret(tokens []string) bool {
	for _, p := range s.Secrets() {
		if p.Covers(tokens) {
			return true
		}
	}
	return false
}

// secretMessage replaces a violation's message at a secret location: the
// library's messages may quote the value or its length.
const secretMessage = "does not match the schema (the value is secret, so the message does not describe it)"

// withholdSecrets rewrites violations at secret locations.
func (s *Schema) withholdSecrets(vs []Violation) []Violation {
	if len(s.Secrets()) == 0 {
		return vs
	}
	for i, v := range vs {
		if s.IsSecret(pointerTokens(v.Path)) {
			vs[i].Message = secretMessage
		}
	}
	return sortViolations(vs)
}

func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i], _ = UnescapeToken(p)
	}
	return parts
}
