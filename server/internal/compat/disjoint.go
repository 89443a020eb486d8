package compat

// maxDisjointDepth bounds how deep into properties disjoint looks for a
// discriminator.
const maxDisjointDepth = 4

// disjoint reports whether no value satisfies both conjunctions: their
// types do not meet, one excludes the other with "not", the finite values
// of one all fail the other, or both describe objects whose required
// property (a discriminator) takes disjoint values. False means only "not
// shown disjoint".
func (c *comparer) disjoint(x, y []node) bool {
	return c.disjointAt(x, y, 0)
}

func (c *comparer) disjointAt(x, y []node, depth int) bool {
	if depth > maxDisjointDepth || !c.spend() {
		return false
	}
	xc, yc := flatten(x, false), flatten(y, false)
	if xc.unsat || yc.unsat {
		return true
	}
	xs, ys := newCase(xc), newCase(yc)
	if xs.empty() || ys.empty() || xs.types&ys.types == 0 {
		return true
	}
	if c.excludes(xs, y) || c.excludes(ys, x) {
		return true
	}
	if allFail(xs, ys) || allFail(ys, xs) {
		return true
	}
	if (xs.types&ys.types)&^tObject != 0 {
		return false
	}
	names := requiredNames(xs.atoms)
	for name := range requiredNames(ys.atoms) {
		names[name] = true
	}
	for _, name := range sortedKeys(names) {
		xn, _, xAbsent := propertyOf(xs.atoms, name)
		yn, _, yAbsent := propertyOf(ys.atoms, name)
		if xAbsent || yAbsent || c.disjointAt(xn, yn, depth+1) {
			return true
		}
	}
	return false
}

// excludes reports whether a case says "not" of a schema equal to one of
// the nodes.
func (c *comparer) excludes(cs *oldCase, nodes []node) bool {
	for _, n := range cs.nots {
		for _, other := range nodes {
			if !other.neg && c.equal(n, other) {
				return true
			}
		}
	}
	return false
}

// allFail reports whether every finite value of a fails b.
func allFail(a, b *oldCase) bool {
	if !a.finite {
		return false
	}
	for _, v := range a.values {
		if b.accepts(v) != fail {
			return false
		}
	}
	return true
}
