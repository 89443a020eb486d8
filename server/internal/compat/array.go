package compat

import (
	"fmt"
	"strconv"
)

// itemOf collects what atoms say about the array item at index i: its
// "prefixItems" entry, or else "items". absent is set when no array the
// atoms accept can have an item there.
func itemOf(atoms []node, i int) (nodes []node, absent bool) {
	for _, a := range atoms {
		if a.doc == nil {
			continue
		}
		if i < prefixLen(a) {
			if c, ok := a.child("prefixItems", strconv.Itoa(i)); ok {
				nodes = append(nodes, c)
			}
		} else if c, _, ok := rest(a); ok {
			nodes = append(nodes, c)
		}
	}
	for _, n := range nodes {
		if n.isFalse() {
			absent = true
		}
	}
	return nodes, absent
}

// oldMaxItems is the most items an array of the old case can have:
// "maxItems", or the length of a tuple closed by "items": false.
func oldMaxItems(cs *oldCase) (int, bool) {
	best, _, found := intKeywordBound(cs, "maxItems", false)
	for _, a := range cs.atoms {
		if r, _, ok := rest(a); ok && r.isFalse() {
			if n := prefixLen(a); !found || n < best {
				best, found = n, true
			}
		}
	}
	return best, found
}

// arrayKeywords checks the keywords that apply to arrays.
func (c *comparer) arrayKeywords(cs *oldCase, a node, strict bool) []Change {
	if !cs.has(tArray) {
		return nil
	}
	var out []Change
	maxLen, bounded := oldMaxItems(cs)
	exists := func(i int) bool {
		if bounded && i >= maxLen {
			return false
		}
		_, absent := itemOf(cs.atoms, i)
		return !absent
	}
	np := prefixLen(a)
	for i := 0; i < np && exists(i); i++ {
		target, ok := a.child("prefixItems", strconv.Itoa(i))
		if !ok {
			continue
		}
		nodes, _ := itemOf(cs.atoms, i)
		out = append(out, under(strconv.Itoa(i), c.descend(nodes, target, strict))...)
	}
	items, kw, hasRest := rest(a)
	if hasRest && !items.trivial() {
		out = append(out, c.restItems(cs, items, kw, np, exists, strict)...)
	}
	m := a.m()
	if u, ok := a.child("unevaluatedItems"); ok && kw != "unevaluatedItems" && m["items"] == nil && !u.trivial() && !c.hasEqualAtom(cs, a) {
		out = append(out, Change{Schema: u.ptr, Reason: Unproven,
			Detail: "unevaluatedItems next to contains or in-place applicators ($ref, allOf, anyOf, oneOf, if) cannot be compared"})
	}
	out = append(out, c.contains(cs, a, strict)...)
	out = append(out, c.lengthKeyword(cs, a, "minItems", true, nil)...)
	out = append(out, c.lengthKeyword(cs, a, "maxItems", false, func() (int, bool) { return oldMaxItems(cs) })...)
	if u, _ := m["uniqueItems"].(bool); u {
		out = append(out, c.uniqueItems(cs, a)...)
	}
	return out
}

// restItems compares the new schema for the items after the new
// prefixItems with what the old case says of each of them.
func (c *comparer) restItems(cs *oldCase, items node, kw string, np int, exists func(int) bool, strict bool) []Change {
	if items.isFalse() {
		if !exists(np) {
			return nil
		}
		return []Change{{Schema: items.ptr, Reason: Narrowed,
			Detail: fmt.Sprintf("%s is now false: arrays may have at most %d %s", kw, np, plural(np, "item", "items"))}}
	}
	oldPrefix := 0
	for _, o := range cs.atoms {
		oldPrefix = max(oldPrefix, prefixLen(o))
	}
	var out []Change
	for i := np; i < oldPrefix; i++ {
		if !exists(i) {
			return out
		}
		nodes, _ := itemOf(cs.atoms, i)
		out = append(out, under(strconv.Itoa(i), c.descend(nodes, items, strict))...)
	}
	last := max(np, oldPrefix)
	if !exists(last) {
		return out
	}
	nodes, _ := itemOf(cs.atoms, last)
	return append(out, under("*", c.descend(nodes, items, strict))...)
}

// contains checks "contains" with its "minContains" and "maxContains".
func (c *comparer) contains(cs *oldCase, a node, strict bool) []Change {
	ct, ok := a.child("contains")
	if !ok {
		return nil
	}
	m := a.m()
	lo, hasLo := intArg(m["minContains"])
	if !hasLo {
		lo = 1
	}
	hi, hasHi := intArg(m["maxContains"])
	if (lo == 0 && !hasHi) || c.hasEqualKeywords(cs, a, "contains", "minContains", "maxContains") {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, "contains"); decided && len(fails) == 0 {
		return nil
	}
	minOK, maxOK := lo == 0, !hasHi
	if n, ok := oldMaxItems(cs); ok && hasHi && n <= hi {
		maxOK = true
	}
	for _, o := range cs.atoms {
		oc, ok := o.child("contains")
		if !ok {
			continue
		}
		olo, ok := intArg(o.m()["minContains"])
		if !ok {
			olo = 1
		}
		ohi, ohas := intArg(o.m()["maxContains"])
		if !minOK && olo >= lo && len(c.descend([]node{oc}, ct, strict)) == 0 {
			minOK = true
		}
		if !maxOK && ohas && ohi <= hi && c.equal(oc, ct) {
			maxOK = true
		}
	}
	if minOK && maxOK {
		return nil
	}
	_, had := cs.keyword("contains")
	var detail string
	switch {
	case !had && !minOK:
		detail = fmt.Sprintf("contains added: arrays must now have at least %d matching %s", lo, plural(lo, "item", "items"))
	case !had:
		detail = fmt.Sprintf("contains added with maxContains %d", hi)
	case !minOK:
		detail = fmt.Sprintf("contains changed: arrays must now have at least %d %s matching the new schema", lo, plural(lo, "item", "items"))
	default:
		detail = fmt.Sprintf("maxContains %d cannot be shown to hold for arrays the old schema accepted", hi)
	}
	return []Change{{Schema: a.at("contains"), Reason: Contains, Detail: detail}}
}

func (c *comparer) uniqueItems(cs *oldCase, a node) []Change {
	for _, o := range cs.atoms {
		if u, _ := o.m()["uniqueItems"].(bool); u {
			return nil
		}
	}
	if n, ok := oldMaxItems(cs); ok && n <= 1 {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, "uniqueItems"); decided && len(fails) == 0 {
		return nil
	}
	return []Change{{Schema: a.at("uniqueItems"), Reason: UniqueItems, Detail: "uniqueItems added: arrays with repeated items are no longer accepted"}}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
