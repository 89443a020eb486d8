package compat

import (
	"slices"
	"strconv"

	"github.com/convergehq/converge/server/internal/schema"
)

// equal reports whether two subschemas are the same after following
// references: same asserting keywords with equal arguments. It ignores
// annotations. False only means "not shown equal".
func (c *comparer) equal(a, b node) bool {
	return c.equalSeen(a, b, map[[2]string]bool{})
}

func (c *comparer) equalSeen(a, b node, seen map[[2]string]bool) bool {
	if a.neg != b.neg || a.types != b.types {
		return false
	}
	if !c.spend() {
		return false
	}
	pair := [2]string{identity(a), identity(b)}
	if seen[pair] {
		return true // assumed while being compared: a bisimulation
	}
	seen[pair] = true
	ab, aIsBool := a.v.(bool)
	bb, bIsBool := b.v.(bool)
	if aIsBool || bIsBool {
		return aIsBool && bIsBool && ab == bb
	}
	am, bm := a.m(), b.m()
	if am == nil || bm == nil {
		return false
	}
	for kw := range assertingKeywords {
		av, aok := am[kw]
		bv, bok := bm[kw]
		if !aok && !bok {
			continue
		}
		if aok != bok || !c.equalKeyword(a, b, kw, av, bv, seen) {
			return false
		}
	}
	return true
}

func (c *comparer) equalKeyword(a, b node, kw string, av, bv any, seen map[[2]string]bool) bool {
	switch kw {
	case "$ref":
		as, _ := av.(string)
		bs, _ := bv.(string)
		if a.doc == nil || b.doc == nil {
			return false
		}
		at, ok1 := a.doc.resolve(a.ptr, as)
		bt, ok2 := b.doc.resolve(b.ptr, bs)
		return ok1 && ok2 && c.equalSeen(at, bt, seen)
	case "$dynamicRef", "$recursiveRef":
		if a.doc == nil || b.doc == nil {
			return false
		}
		at, ok1 := a.doc.resolveStatic(node{doc: a.doc, ptr: a.ptr, v: map[string]any{kw: av}})
		bt, ok2 := b.doc.resolveStatic(node{doc: b.doc, ptr: b.ptr, v: map[string]any{kw: bv}})
		return ok1 && ok2 && len(at) == 1 && len(bt) == 1 && c.equalSeen(at[0], bt[0], seen)
	case "not", "additionalProperties", "items", "propertyNames", "contains", "if", "then", "else",
		"unevaluatedProperties", "unevaluatedItems":
		return c.equalChild(a, b, seen, kw)
	case "allOf", "anyOf", "oneOf", "prefixItems":
		aa, _ := av.([]any)
		ba, _ := bv.([]any)
		if len(aa) != len(ba) {
			return false
		}
		for i := range aa {
			if !c.equalChild(a, b, seen, kw, strconv.Itoa(i)) {
				return false
			}
		}
		return true
	case "properties", "patternProperties", "dependentSchemas", "dependencies":
		am, _ := av.(map[string]any)
		bm, _ := bv.(map[string]any)
		if len(am) != len(bm) {
			return false
		}
		for k, x := range am {
			y, ok := bm[k]
			if !ok {
				return false
			}
			if _, isList := x.([]any); isList {
				if !schema.EqualJSON(x, y) {
					return false
				}
				continue
			}
			if !c.equalChild(a, b, seen, kw, k) {
				return false
			}
		}
		return true
	case "required":
		as, bs := stringList(av), stringList(bv)
		slices.Sort(as)
		slices.Sort(bs)
		return slices.Equal(slices.Compact(as), slices.Compact(bs))
	case "format":
		as, _ := av.(string)
		bs, _ := bv.(string)
		return as == bs || (!assertedFormat(as) && !assertedFormat(bs))
	}
	return schema.EqualJSON(av, bv)
}

func (c *comparer) equalChild(a, b node, seen map[[2]string]bool, tokens ...string) bool {
	x, ok1 := a.child(tokens...)
	y, ok2 := b.child(tokens...)
	return ok1 && ok2 && c.equalSeen(x, y, seen)
}

// hasEqualAtom reports whether some atom of the old case equals n.
func (c *comparer) hasEqualAtom(cs *oldCase, n node) bool {
	for _, a := range cs.atoms {
		if c.equal(a, n) {
			return true
		}
	}
	return false
}

// hasEqualKeywords reports whether some old atom has the same arguments
// for every one of the keywords as the new atom a (a keyword absent on
// both sides counts as equal).
func (c *comparer) hasEqualKeywords(cs *oldCase, a node, kws ...string) bool {
	for _, o := range cs.atoms {
		if o.doc == nil {
			continue
		}
		same := true
		for _, kw := range kws {
			ov, ook := o.m()[kw]
			nv, nok := a.m()[kw]
			if ook != nok || (ook && !c.equalKeyword(o, a, kw, ov, nv, map[[2]string]bool{})) {
				same = false
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}
