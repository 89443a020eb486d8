package compat

import (
	"fmt"
	"math/big"
	"strings"
)

func (c *comparer) syntheticTypes(cs *oldCase, a node) []Change {
	if cs.types&^a.types == 0 {
		return nil
	}
	return []Change{{Schema: a.ptr, Reason: Retyped, Detail: fmt.Sprintf("type was %s, now %s", cs.types, a.types)}}
}

// typeKeyword: every type the old case admits must stay admitted.
func (c *comparer) typeKeyword(cs *oldCase, a node) []Change {
	t, ok := a.m()["type"]
	if !ok {
		return nil
	}
	nt := typesOf(t)
	if cs.types&^nt == 0 {
		return nil
	}
	written, _ := marshal(t)
	detail := fmt.Sprintf("type was %s, now %s", cs.types, written)
	if cs.types == tAll {
		detail = fmt.Sprintf("type %s added: values of any type were accepted", written)
	}
	return []Change{{Schema: a.at("type"), Reason: Retyped, Detail: detail}}
}

// enumKeywords: the new enum or const must keep every value the old case
// accepted.
func (c *comparer) enumKeywords(cs *oldCase, a node) []Change {
	var out []Change
	for _, kw := range []string{"enum", "const"} {
		arg, ok := a.m()[kw]
		if !ok {
			continue
		}
		var allowed []any
		if kw == "enum" {
			allowed, _ = arg.([]any)
		} else {
			allowed = []any{arg}
		}
		now := "now " + renderAll(allowed)
		if kw == "const" {
			now = "now const " + render(arg)
		}
		if cs.finite {
			var lost []any
			for _, v := range cs.values {
				if !containsValue(allowed, v) {
					lost = append(lost, v)
				}
			}
			if len(lost) == 0 {
				continue
			}
			was := "enum was " + renderAll(cs.values)
			if _, isConst := cs.keyword("const"); isConst && len(cs.values) == 1 {
				was = "const was " + render(cs.values[0])
			}
			out = append(out, Change{Schema: a.at(kw), Reason: EnumRestricted,
				Detail: fmt.Sprintf("%s, %s: %s no longer accepted", was, now, renderList(lost))})
			continue
		}
		if coversAll(cs.types, allowed) {
			continue
		}
		detail := fmt.Sprintf("enum %s added", renderAll(allowed))
		if kw == "const" {
			detail = fmt.Sprintf("const %s added", render(arg))
		}
		out = append(out, Change{Schema: a.at(kw), Reason: EnumRestricted, Detail: detail})
	}
	return out
}

// coversAll reports whether a list of values holds every value of the
// types, which is possible only for null and booleans.
func coversAll(t typeSet, vs []any) bool {
	if t&^(tNull|tBool) != 0 {
		return false
	}
	if t&tNull != 0 && !containsValue(vs, nil) {
		return false
	}
	return t&tBool == 0 || (containsValue(vs, true) && containsValue(vs, false))
}

func renderList(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = render(v)
	}
	return shorten(strings.Join(parts, ", "))
}

// bound is the tightest limit the old case puts on one side of a value.
type bound struct {
	value     *big.Rat
	exclusive bool
	keyword   string
	written   any
}

// numberBounds reads the old case's lower or upper numeric bound.
func numberBounds(cs *oldCase, lower bool) *bound {
	incl, excl := "maximum", "exclusiveMaximum"
	if lower {
		incl, excl = "minimum", "exclusiveMinimum"
	}
	var best *bound
	for _, a := range cs.atoms {
		for _, kw := range []string{incl, excl} {
			arg, ok := a.m()[kw]
			if !ok {
				continue
			}
			r, ok := toRat(arg)
			if !ok {
				continue
			}
			b := &bound{value: r, exclusive: kw == excl, keyword: kw, written: arg}
			if best == nil || tighter(b, best, lower) {
				best = b
			}
		}
	}
	return best
}

func tighter(a, b *bound, lower bool) bool {
	c := a.value.Cmp(b.value)
	if !lower {
		c = -c
	}
	return c > 0 || (c == 0 && a.exclusive && !b.exclusive)
}

// implies reports whether an old bound guarantees a new one. With only
// integers in play, exclusive bounds are first made inclusive (x > 2.5
// and x >= 3 say the same of integers).
func implies(old *bound, newValue *big.Rat, newExclusive, lower, ints bool) bool {
	if old == nil {
		return false
	}
	ov, oe := old.value, old.exclusive
	nv, ne := newValue, newExclusive
	if ints {
		ov, oe = intBound(ov, oe, lower), false
		nv, ne = intBound(nv, ne, lower), false
	}
	c := ov.Cmp(nv)
	if !lower {
		c = -c
	}
	return c > 0 || (c == 0 && (oe || !ne))
}

// intBound is the inclusive integer bound equivalent to a bound.
func intBound(v *big.Rat, exclusive, lower bool) *big.Rat {
	q, r := new(big.Int).QuoRem(v.Num(), v.Denom(), new(big.Int))
	// q truncates toward zero; floor and ceiling follow from the sign of r.
	floor, ceil := new(big.Int).Set(q), new(big.Int).Set(q)
	if r.Sign() < 0 {
		floor.Sub(floor, big.NewInt(1))
	} else if r.Sign() > 0 {
		ceil.Add(ceil, big.NewInt(1))
	}
	switch {
	case lower && exclusive:
		return new(big.Rat).SetInt(floor.Add(floor, big.NewInt(1)))
	case lower:
		return new(big.Rat).SetInt(ceil)
	case exclusive:
		return new(big.Rat).SetInt(ceil.Sub(ceil, big.NewInt(1)))
	default:
		return new(big.Rat).SetInt(floor)
	}
}

// boundDetail describes a tightened bound, e.g. "minimum was 1, now 5".
func boundDetail(kw string, now any, old string, oldWritten any) string {
	switch {
	case old == "":
		return fmt.Sprintf("%s %s added", kw, render(now))
	case old == kw:
		return fmt.Sprintf("%s was %s, now %s", kw, render(oldWritten), render(now))
	default:
		return fmt.Sprintf("%s %s replaces %s %s", kw, render(now), old, render(oldWritten))
	}
}

func (c *comparer) numberKeywords(cs *oldCase, a node) []Change {
	if !cs.has(tNumber) {
		return nil
	}
	var out []Change
	m := a.m()
	for _, kw := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		arg, ok := m[kw]
		if !ok {
			continue
		}
		nv, ok := toRat(arg)
		if !ok {
			continue
		}
		if fails, decided := cs.keywordByValues(a, kw); decided {
			if len(fails) > 0 {
				out = append(out, Change{Schema: a.at(kw), Reason: Narrowed,
					Detail: fmt.Sprintf("%s %s added: %s no longer accepted", kw, render(arg), renderList(fails))})
			}
			continue
		}
		lower := kw == "minimum" || kw == "exclusiveMinimum"
		old := numberBounds(cs, lower)
		if implies(old, nv, strings.HasPrefix(kw, "exclusive"), lower, cs.onlyInts()) {
			continue
		}
		oldKw, oldWritten := "", any(nil)
		if old != nil {
			oldKw, oldWritten = old.keyword, old.written
		}
		out = append(out, Change{Schema: a.at(kw), Reason: Narrowed, Detail: boundDetail(kw, arg, oldKw, oldWritten)})
	}
	if arg, ok := m["multipleOf"]; ok {
		out = append(out, c.multipleOf(cs, a, arg)...)
	}
	return out
}

func (c *comparer) multipleOf(cs *oldCase, a node, arg any) []Change {
	nv, ok := toRat(arg)
	if !ok || nv.Sign() <= 0 {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, "multipleOf"); decided {
		if len(fails) == 0 {
			return nil
		}
		return []Change{{Schema: a.at("multipleOf"), Reason: Narrowed,
			Detail: fmt.Sprintf("multipleOf %s added: %s no longer accepted", render(arg), renderList(fails))}}
	}
	if cs.onlyInts() && new(big.Rat).Inv(nv).IsInt() {
		return nil // every integer is a multiple of 1/n
	}
	var first any
	for _, o := range cs.atoms {
		ov, ok := o.m()["multipleOf"]
		if !ok {
			continue
		}
		if first == nil {
			first = ov
		}
		if r, ok := toRat(ov); ok && r.Sign() > 0 && new(big.Rat).Quo(r, nv).IsInt() {
			return nil
		}
	}
	oldKw := ""
	if first != nil {
		oldKw = "multipleOf"
	}
	return []Change{{Schema: a.at("multipleOf"), Reason: Narrowed, Detail: boundDetail("multipleOf", arg, oldKw, first)}}
}

// intKeywordBound is the tightest old value of an integer keyword
// (minLength, maxItems, ...): the largest minimum or the smallest maximum.
func intKeywordBound(cs *oldCase, kw string, lower bool) (int, any, bool) {
	best, written, found := 0, any(nil), false
	for _, a := range cs.atoms {
		arg, ok := a.m()[kw]
		if !ok {
			continue
		}
		n, ok := intArg(arg)
		if !ok {
			continue
		}
		if !found || (lower && n > best) || (!lower && n < best) {
			best, written, found = n, arg, true
		}
	}
	return best, written, found
}

// lengthKeyword checks one integer bound keyword of a new atom against
// the old case's bound. evidence adds bounds the old case implies without
// the keyword itself (e.g. the length of a closed tuple).
func (c *comparer) lengthKeyword(cs *oldCase, a node, kw string, lower bool, evidence func() (int, bool)) []Change {
	arg, ok := a.m()[kw]
	if !ok {
		return nil
	}
	want, ok := intArg(arg)
	if !ok || (lower && want == 0) {
		return nil
	}
	if fails, decided := cs.keywordByValues(a, kw); decided {
		if len(fails) == 0 {
			return nil
		}
		return []Change{{Schema: a.at(kw), Reason: Narrowed,
			Detail: fmt.Sprintf("%s %s added: %s no longer accepted", kw, render(arg), renderList(fails))}}
	}
	old, written, found := intKeywordBound(cs, kw, lower)
	if found && ((lower && old >= want) || (!lower && old <= want)) {
		return nil
	}
	if evidence != nil {
		if n, ok := evidence(); ok && ((lower && n >= want) || (!lower && n <= want)) {
			return nil
		}
	}
	oldKw := ""
	if found {
		oldKw = kw
	}
	return []Change{{Schema: a.at(kw), Reason: Narrowed, Detail: boundDetail(kw, arg, oldKw, written)}}
}

func (c *comparer) stringKeywords(cs *oldCase, a node) []Change {
	if !cs.has(tString) {
		return nil
	}
	var out []Change
	out = append(out, c.lengthKeyword(cs, a, "minLength", true, nil)...)
	out = append(out, c.lengthKeyword(cs, a, "maxLength", false, nil)...)
	m := a.m()
	if p, ok := m["pattern"].(string); ok {
		out = append(out, c.sameString(cs, a, "pattern", p, PatternAdded)...)
	}
	if f, ok := m["format"].(string); ok && assertedFormat(f) {
		out = append(out, c.sameString(cs, a, "format", f, FormatAdded)...)
	}
	return out
}

// sameString checks a keyword that the old case must already have with
// the same argument (pattern, format): regexes and formats cannot be
// compared by meaning, only by text.
func (c *comparer) sameString(cs *oldCase, a node, kw, arg string, reason Reason) []Change {
	if fails, decided := cs.keywordByValues(a, kw); decided {
		if len(fails) == 0 {
			return nil
		}
		return []Change{{Schema: a.at(kw), Reason: reason,
			Detail: fmt.Sprintf("%s %s added: %s no longer accepted", kw, quote(arg), renderList(fails))}}
	}
	var first string
	for _, o := range cs.atoms {
		ov, ok := o.m()[kw].(string)
		if !ok || (kw == "format" && !assertedFormat(ov)) {
			continue
		}
		if ov == arg {
			return nil
		}
		if first == "" {
			first = ov
		}
	}
	if first == "" {
		return []Change{{Schema: a.at(kw), Reason: reason, Detail: fmt.Sprintf("%s %s added", kw, quote(arg))}}
	}
	return []Change{{Schema: a.at(kw), Reason: reason, Detail: fmt.Sprintf("%s was %s, now %s", kw, quote(first), quote(arg))}}
}
