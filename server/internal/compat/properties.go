package compat

import (
	"regexp"
	"slices"
)

// propertyOf collects what atoms say about the value of the property
// name: its "properties" entry, the "patternProperties" it matches, or
// else "additionalProperties". declared is set when some atom says
// anything; absent when the property cannot be present at all.
func propertyOf(atoms []node, name string) (nodes []node, declared, absent bool) {
	for _, a := range atoms {
		if a.doc == nil {
			continue
		}
		matched := false
		if c, ok := a.child("properties", name); ok {
			nodes = append(nodes, c)
			matched, declared = true, true
		}
		pats, _ := a.m()["patternProperties"].(map[string]any)
		for _, p := range sortedKeys(pats) {
			re, ok := compilePattern(p)
			if !ok || !re.MatchString(name) {
				continue
			}
			if c, ok := a.child("patternProperties", p); ok {
				nodes = append(nodes, c)
				matched, declared = true, true
			}
		}
		if !matched {
			if c, _, ok := additional(a); ok {
				nodes = append(nodes, c)
				if !c.trivial() {
					declared = true
				}
			}
		}
		if pn, ok := a.child("propertyNames"); ok && eval(pn, name, 0) == fail {
			absent = true
		}
	}
	for _, n := range nodes {
		if n.isFalse() {
			absent = true
		}
	}
	return nodes, declared, absent
}

// declaredNames lists the property names the atoms declare in
// "properties".
func declaredNames(atoms []node) []string {
	var names []string
	for _, a := range atoms {
		props, _ := a.m()["properties"].(map[string]any)
		for name := range props {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// requiredNames lists the names the atoms require.
func requiredNames(atoms []node) map[string]bool {
	out := map[string]bool{}
	for _, a := range atoms {
		for _, name := range stringList(a.m()["required"]) {
			out[name] = true
		}
	}
	return out
}

// patternRel tells how an old pattern relates to a family of property
// names: it matches all of them, none of them, or perhaps some.
type patternRel int

const (
	relMaybe patternRel = iota
	relAll
	relNone
)

// maxFamilyAlternatives bounds how many combinations familyOf builds.
const maxFamilyAlternatives = 16

// familyOf says what old atoms require of the values of properties in a
// family of names none of the atoms declares in "properties" (such as
// "names matching a new pattern"). Each alternative is a set of schemas
// that some of those values satisfy, and every value satisfies one of the
// alternatives; an empty alternative means "unconstrained".
func familyOf(atoms []node, rel func(pattern string) patternRel) [][]node {
	alts := [][]node{nil}
	for _, a := range atoms {
		if a.doc == nil {
			continue
		}
		var options [][]node
		pats, _ := a.m()["patternProperties"].(map[string]any)
		definite := false
		for _, p := range sortedKeys(pats) {
			c, ok := a.child("patternProperties", p)
			if !ok {
				continue
			}
			switch rel(p) {
			case relAll:
				options, definite = [][]node{{c}}, true
			case relMaybe:
				if !definite {
					options = append(options, []node{c})
				}
			}
			if definite {
				break
			}
		}
		if !definite {
			if c, _, ok := additional(a); ok && !c.trivial() {
				options = append(options, []node{c})
			} else if len(options) > 0 {
				options = append(options, nil)
			}
		}
		if len(options) == 0 {
			continue
		}
		var next [][]node
		for _, base := range alts {
			for _, o := range options {
				next = append(next, append(append([]node(nil), base...), o...))
			}
		}
		if len(next) > maxFamilyAlternatives {
			return [][]node{nil}
		}
		alts = next
	}
	return alts
}

// newPatterns compiles the "patternProperties" of a new atom. A pattern
// that does not compile maps to nil: which names it matches is unknown.
func newPatterns(a node) map[string]*regexp.Regexp {
	pats, _ := a.m()["patternProperties"].(map[string]any)
	out := make(map[string]*regexp.Regexp, len(pats))
	for p := range pats {
		re, _ := compilePattern(p)
		out[p] = re
	}
	return out
}

// matchesAny reports whether name surely matches one of the patterns.
func matchesAny(res map[string]*regexp.Regexp, name string) bool {
	for _, re := range res {
		if re != nil && re.MatchString(name) {
			return true
		}
	}
	return false
}

// closedAtom reports whether an atom admits no property beyond those it
// names in "properties".
func closedAtom(a node) bool {
	if _, ok := a.m()["patternProperties"]; ok {
		return false
	}
	c, _, ok := additional(a)
	return ok && c.isFalse()
}
