package compat

import (
	"fmt"
	"strconv"
)

// logicKeywords checks anyOf, oneOf, not and if/then/else. allOf and $ref
// never get here: they are flattened into atoms.
func (c *comparer) logicKeywords(cs *oldCase, a node, strict bool) []Change {
	var out []Change
	out = append(out, c.anyOf(cs, a, strict)...)
	out = append(out, c.oneOf(cs, a, strict)...)
	out = append(out, c.not(cs, a)...)
	out = append(out, c.ifThenElse(cs, a, strict)...)
	return out
}

func branches(a node, kw string) []node {
	arr, _ := a.m()[kw].([]any)
	out := make([]node, 0, len(arr))
	for i := range arr {
		if b, ok := a.child(kw, strconv.Itoa(i)); ok {
			out = append(out, b)
		}
	}
	return out
}

// singleTypes lists the types of a set one by one.
func singleTypes(t typeSet) []typeSet {
	var out []typeSet
	for bit := tNull; bit <= tFrac; bit <<= 1 {
		if t&bit != 0 {
			out = append(out, bit)
		}
	}
	return out
}

// byType runs ok on the whole case and, failing that, on the case cut
// down to each of its types in turn (so that ["string","integer"] can be
// matched by anyOf: [{type: string}, {type: integer}]).
func byType(cs *oldCase, ok func(nodes []node) bool) bool {
	if ok(cs.nodes()) {
		return true
	}
	if cs.types.count() < 2 {
		return false
	}
	for _, t := range singleTypes(cs.types) {
		if !ok(append(cs.nodes(), typeNode(t))) {
			return false
		}
	}
	return true
}

// bestBranch reports the findings of the branch that comes closest to
// accepting the old case: the fewest findings, the first on a tie.
// Branches whose types do not meet the case's come last.
func (c *comparer) bestBranch(cs *oldCase, bs []node, strict bool) []Change {
	var best []Change
	bestScore := 0
	for i, b := range bs {
		fs := c.sub(cs.nodes(), b, strict)
		score := len(fs)
		if bc := newCase(flatten([]node{b}, false)); bc.types&cs.types == 0 {
			score += len(bs) + 1<<20
		}
		if i == 0 || score < bestScore {
			best, bestScore = fs, score
		}
	}
	return best
}

// anyOf: every old value must match some branch.
func (c *comparer) anyOf(cs *oldCase, a node, strict bool) []Change {
	bs := branches(a, "anyOf")
	if len(bs) == 0 || c.hasEqualKeywords(cs, a, "anyOf") {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, "anyOf"); decided && len(fails) == 0 {
		return nil
	}
	if byType(cs, func(nodes []node) bool {
		for _, b := range bs {
			if c.proves(nodes, b, strict) {
				return true
			}
		}
		return false
	}) {
		return nil
	}
	return c.bestBranch(cs, bs, strict)
}

// oneOf: every old value must match exactly one branch. A branch that
// accepts the old values is enough only if the other branches are shown
// disjoint from them.
func (c *comparer) oneOf(cs *oldCase, a node, strict bool) []Change {
	bs := branches(a, "oneOf")
	if len(bs) == 0 || c.hasEqualKeywords(cs, a, "oneOf") {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, "oneOf"); decided && len(fails) == 0 {
		return nil
	}
	matched, overlap := -1, -1
	if byType(cs, func(nodes []node) bool {
		for j, b := range bs {
			if !c.proves(nodes, b, strict) {
				continue
			}
			clash := -1
			for k, other := range bs {
				if k != j && !c.disjoint(nodes, []node{other}) {
					clash = k
					break
				}
			}
			if clash < 0 {
				return true
			}
			matched, overlap = j, clash
		}
		return false
	}) {
		return nil
	}
	if matched >= 0 {
		return []Change{{Schema: a.at("oneOf"), Reason: Unproven, Detail: fmt.Sprintf(
			"oneOf: old values match branch %d but cannot be shown not to match branch %d too, and oneOf refuses a value that matches two branches",
			matched, overlap)}}
	}
	return c.bestBranch(cs, bs, strict)
}

// not: no old value may match the new "not" schema.
func (c *comparer) not(cs *oldCase, a node) []Change {
	nt, ok := a.child("not")
	if !ok || c.hasEqualKeywords(cs, a, "not") {
		return nil
	}
	for _, n := range cs.nots {
		if c.equal(n, nt) {
			return nil
		}
	}
	if fails, decided := cs.keywordByValues(a, "not"); decided && len(fails) == 0 {
		return nil
	}
	if c.disjoint(cs.nodes(), []node{nt}) {
		return nil
	}
	return []Change{{Schema: nt.ptr, Reason: Unproven, Detail: `not: cannot prove that no value the old schema accepted matches the "not" schema`}}
}

// ifThenElse: old values that match "if" must match "then", the others
// "else". Each part holds if the old values match the branch outright, or
// if none (for then) or all (for else) of them match "if".
func (c *comparer) ifThenElse(cs *oldCase, a node, strict bool) []Change {
	cond, ok := a.child("if")
	if !ok {
		return nil
	}
	then, hasThen := a.child("then")
	els, hasElse := a.child("else")
	if (!hasThen && !hasElse) || c.hasEqualKeywords(cs, a, "if", "then", "else") {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, "if"); decided && len(fails) == 0 {
		return nil
	}
	var out []Change
	if hasThen {
		if fs := c.sub(cs.nodes(), then, strict); len(fs) > 0 && !c.disjoint(cs.nodes(), []node{cond}) {
			out = append(out, fs...)
		}
	}
	if hasElse {
		// Whether old values all match "if" is asked strictly: a property
		// the old schema never declared may well be present in a value.
		if fs := c.sub(cs.nodes(), els, strict); len(fs) > 0 && !c.proves(cs.nodes(), cond, true) {
			out = append(out, fs...)
		}
	}
	return out
}
