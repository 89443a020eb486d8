package compat

// oldCase is one case of the old schema at one place of the instance: a
// conjunction without disjunctions left to split, and what can be read off
// it at once.
type oldCase struct {
	conj
	// types holds every type a value of the case may have.
	types typeSet
	// values, when finite is set, holds every value the case may accept
	// (from enum and const), already filtered by the other keywords.
	values []any
	finite bool
}

func newCase(c conj) *oldCase {
	cs := &oldCase{conj: c, types: tAll}
	for _, a := range c.atoms {
		if a.types != 0 {
			cs.types &= a.types
		}
		m := a.m()
		if t, ok := m["type"]; ok {
			cs.types &= typesOf(t)
		}
		var vals []any
		if e, ok := m["enum"].([]any); ok {
			vals = e
		} else if k, ok := m["const"]; ok {
			vals = []any{k}
		} else {
			continue
		}
		if !cs.finite {
			cs.values, cs.finite = append([]any(nil), vals...), true
			continue
		}
		kept := cs.values[:0:0]
		for _, v := range cs.values {
			if containsValue(vals, v) {
				kept = append(kept, v)
			}
		}
		cs.values = kept
	}
	if cs.finite {
		kept := cs.values[:0:0]
		var vt typeSet
		for _, v := range cs.values {
			if typeOfValue(v)&cs.types != 0 && cs.accepts(v) != fail {
				kept = append(kept, v)
				vt |= typeOfValue(v)
			}
		}
		cs.values = kept
		cs.types &= vt
	}
	return cs
}

// empty reports whether the case accepts no value at all.
func (cs *oldCase) empty() bool {
	return cs.unsat || cs.types == 0 || (cs.finite && len(cs.values) == 0)
}

// accepts evaluates the whole case on a concrete value.
func (cs *oldCase) accepts(v any) verdict {
	r := pass
	for _, a := range cs.atoms {
		if r = r.and(eval(a, v, 0)); r == fail {
			return fail
		}
	}
	for _, n := range cs.nots {
		if r = r.and(eval(n, v, 0).not()); r == fail {
			return fail
		}
	}
	return r
}

// nodes returns the case as a node list, for comparing it again.
func (cs *oldCase) nodes() []node {
	out := make([]node, 0, len(cs.atoms)+len(cs.nots))
	out = append(out, cs.atoms...)
	for _, n := range cs.nots {
		n.neg = true
		out = append(out, n)
	}
	return out
}

// has reports whether the case may hold a value of one of the types.
func (cs *oldCase) has(t typeSet) bool { return cs.types&t != 0 }

// onlyInts reports whether every number the case accepts is an integer.
func (cs *oldCase) onlyInts() bool { return cs.types&tNumber == tInt }

// byValues decides a check from the case's finite values: fails lists the
// values the check refuses. decided is false when the case has no finite
// values or the check cannot be evaluated on one of them.
func (cs *oldCase) byValues(check func(v any) verdict) (fails []any, decided bool) {
	if !cs.finite {
		return nil, false
	}
	for _, v := range cs.values {
		switch check(v) {
		case unknown:
			return nil, false
		case fail:
			fails = append(fails, v)
		}
	}
	return fails, true
}

// keywordByValues is byValues for one keyword of a new atom.
func (cs *oldCase) keywordByValues(a node, kw string) (fails []any, decided bool) {
	return cs.byValues(func(v any) verdict { return evalKeyword(a, kw, v, 0) })
}

// keyword returns the first value of a keyword among the case's atoms.
func (cs *oldCase) keyword(kw string) (any, bool) {
	for _, a := range cs.atoms {
		if v, ok := a.m()[kw]; ok {
			return v, true
		}
	}
	return nil, false
}
