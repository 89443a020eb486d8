package compat

import (
	"strconv"
)

// conj is a conjunction of subschemas: what a value must satisfy at one
// place of the instance. "$ref" and "allOf" are flattened into atoms, so
// every atom is an object schema whose keywords all apply.
type conj struct {
	atoms []node
	// nots are schemas the value does not match (old side only).
	nots []node
	// unsat is set when no value satisfies the conjunction.
	unsat bool
	// unsatAt is the pointer of a false schema or a reference cycle that
	// made it so (new side).
	unsatAt string
	// cycle is set when unsat comes from references that loop without
	// consuming the instance: the validator refuses every value there.
	cycle bool
	// opaque lists subschemas whose dynamic references cannot be resolved
	// without an evaluation path (new side).
	opaque []node
}

// flatten builds the conjunction of nodes. On the old side (isNew false)
// whatever cannot be read is left out, which only widens what the old
// schema is taken to accept; on the new side it is kept as opaque, so the
// checker reports it.
func flatten(nodes []node, isNew bool) conj {
	f := flattener{isNew: isNew, seen: map[string]bool{}, onStack: map[string]bool{}}
	// Atoms already split are recorded first, so that references reaching
	// the same subschema again do not bring back its disjunctions.
	var split []node
	for _, n := range nodes {
		if n.noSplit && f.add(n) {
			split = append(split, n)
		}
	}
	for _, n := range split {
		f.expand(n)
	}
	for _, n := range nodes {
		if !n.noSplit {
			f.visit(n)
		}
	}
	return f.c
}

type flattener struct {
	isNew   bool
	c       conj
	seen    map[string]bool
	onStack map[string]bool
}

func identity(n node) string {
	n.noSplit = false
	return n.key()
}

func (f *flattener) visit(n node) {
	if f.onStack[identity(n)] {
		// A reference loop that consumes nothing: the validator reports a
		// cycle for every value that reaches it.
		f.c.unsat, f.c.cycle, f.c.unsatAt = true, true, n.ptr
		return
	}
	if f.add(n) {
		f.expand(n)
	}
}

// add records one node; it reports whether the node is a new atom whose
// references and allOf still need visiting.
func (f *flattener) add(n node) bool {
	id := identity(n)
	if f.c.unsat || f.seen[id] {
		return false
	}
	f.seen[id] = true
	if n.neg {
		p := n
		p.neg = false
		if p.trivial() {
			f.c.unsat = true
		} else if !p.isFalse() {
			f.c.nots = append(f.c.nots, p)
		}
		return false
	}
	switch v := n.v.(type) {
	case bool:
		if !v {
			f.c.unsat, f.c.unsatAt = true, n.ptr
		}
		return false
	case map[string]any:
		f.c.atoms = append(f.c.atoms, n)
		return n.doc != nil
	}
	return false
}

// expand visits what an atom pulls in: its references and allOf (and, on
// the old side, its "not" as a negated node).
func (f *flattener) expand(n node) {
	id := identity(n)
	f.onStack[id] = true
	defer delete(f.onStack, id)
	m := n.m()
	if ref, ok := m["$ref"].(string); ok {
		if t, ok := n.doc.resolve(n.ptr, ref); ok {
			f.visit(t)
		} else if f.isNew {
			f.c.opaque = append(f.c.opaque, n)
		}
	}
	_, dyn := m["$dynamicRef"]
	_, rec := m["$recursiveRef"]
	if dyn || rec {
		if ts, ok := n.doc.resolveStatic(n); ok {
			for _, t := range ts {
				f.visit(t)
			}
		} else if f.isNew {
			f.c.opaque = append(f.c.opaque, n)
		}
	}
	if arr, ok := m["allOf"].([]any); ok {
		for i := range arr {
			if c, ok := n.child("allOf", strconv.Itoa(i)); ok {
				f.visit(c)
			}
		}
	}
	if !f.isNew {
		if c, ok := n.child("not"); ok {
			c.neg = true
			f.visit(c)
		}
	}
}

// maxCases bounds how many cases one old conjunction is split into.
// Disjunctions beyond it are left unsplit, which only makes the old side
// look wider.
const maxCases = 32

// split turns an old conjunction into cases whose union is the same set
// of values, one per branch of each anyOf and oneOf (a oneOf value matches
// one branch at least) and two per if/then/else: if and then, or not-if
// and else. Cases let one old branch be compared with the new schema
// without the other branches in the way.
func split(c conj) []conj {
	return splitInto(c, maxCases)
}

func splitInto(c conj, budget int) []conj {
	if c.unsat {
		return nil
	}
	for i, a := range c.atoms {
		if a.noSplit || a.doc == nil {
			continue
		}
		alts := alternatives(a)
		if len(alts) == 0 {
			continue
		}
		done := a
		done.noSplit = true
		base := make([]node, 0, len(c.atoms)+len(c.nots)+2)
		base = append(base, c.atoms[:i]...)
		base = append(base, done)
		base = append(base, c.atoms[i+1:]...)
		for _, n := range c.nots {
			n.neg = true
			base = append(base, n)
		}
		if len(alts) > budget {
			return splitInto(flatten(base, false), budget)
		}
		var out []conj
		for j, alt := range alts {
			nodes := append(append([]node(nil), base...), alt...)
			share := (budget - len(out)) / (len(alts) - j)
			out = append(out, splitInto(flatten(nodes, false), max(share, 1))...)
		}
		return out
	}
	return []conj{c}
}

// alternatives lists the disjunctions of one atom as sets of nodes, one
// set per combination of branches. It returns nil when the atom has none.
func alternatives(a node) [][]node {
	alts := [][]node{nil}
	product := func(options [][]node) {
		var next [][]node
		for _, base := range alts {
			for _, o := range options {
				next = append(next, append(append([]node(nil), base...), o...))
			}
		}
		alts = next
	}
	split := false
	for _, kw := range []string{"anyOf", "oneOf"} {
		arr, ok := a.m()[kw].([]any)
		if !ok || len(arr) == 0 {
			continue
		}
		var options [][]node
		for i := range arr {
			if c, ok := a.child(kw, strconv.Itoa(i)); ok {
				options = append(options, []node{c})
			}
		}
		product(options)
		split = true
	}
	if cond, ok := a.child("if"); ok {
		then, hasThen := a.child("then")
		els, hasElse := a.child("else")
		if hasThen || hasElse {
			yes := []node{cond}
			if hasThen {
				yes = append(yes, then)
			}
			notCond := cond
			notCond.neg = true
			no := []node{notCond}
			if hasElse {
				no = append(no, els)
			}
			product([][]node{yes, no})
			split = true
		}
	}
	if !split || len(alts) > 4*maxCases {
		return nil
	}
	return alts
}
