package compat

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/convergehq/converge/server/internal/schema"
)

// Check compares what an old schema accepted with what a new one accepts
// and returns every breaking change, sorted by Path, then Reason.
//
// Both schemas are JSON Schema 2020-12 documents as decoded JSON
// (map[string]any, []any, string, bool, float64 or json.Number, nil), the
// way package schema compiles them. The error is non-nil only when one of
// them is not a schema package schema accepts; it then names the document
// ("old" or "new") and the path.
//
// Check is sound, with one deliberate exception: it may report a change
// that is in fact compatible (Unproven says so, and other reasons can be
// over-cautious where keywords interact), but it never misses one that
// makes the new schema refuse a value the old one accepted. The exception
// is a property name the old schema never mentioned (not in properties,
// not matching patternProperties, with additionalProperties absent or
// true): declaring it in the new schema is additive, as if instances never
// carried names the old schema did not describe.
func Check(old, new any) ([]Change, error) {
	return check(old, new, options{})
}

// options tune one comparison. They are internal: Check and CheckManifest
// are the public ways in.
type options struct {
	// rootTypes, when set, are the only types the instance itself can
	// have (manifests: every spec, status, config and input is an object).
	rootTypes typeSet
	// strict turns off the undeclared-property exception, so the result is
	// sound without assumptions (tests use it against the validator).
	strict bool
	// steps overrides the comparison budget.
	steps int
}

// maxSteps bounds the work of one comparison. Past it, Check reports one
// Unproven change instead of an answer it could not finish.
const maxSteps = 200_000

// maxNesting bounds how deep comparisons nest, through the instance and
// through in-place applicators.
const maxNesting = 512

func check(old, new any, o options) ([]Change, error) {
	if _, err := schema.Compile("old", old); err != nil {
		return nil, fmt.Errorf("old schema: %w", err)
	}
	if _, err := schema.Compile("new", new); err != nil {
		return nil, fmt.Errorf("new schema: %w", err)
	}
	if schema.EqualJSON(old, new) {
		return nil, nil
	}
	return compareDocs(old, new, o), nil
}

// compareDocs compares two documents already known to compile.
func compareDocs(old, new any, o options) []Change {
	c := &comparer{
		old:    newDocument(old, "o"),
		new:    newDocument(new, "n"),
		steps:  o.steps,
		active: map[string]activeEntry{},
		memo:   map[string][]Change{},
		lowest: math.MaxInt,
	}
	if c.steps == 0 {
		c.steps = maxSteps
	}
	oldRoot := []node{{doc: c.old, v: old}}
	if o.rootTypes != 0 {
		oldRoot = append(oldRoot, typeNode(o.rootTypes))
	}
	out := c.sub(oldRoot, node{doc: c.new, v: new}, o.strict)
	if c.exhausted {
		return []Change{{Reason: Unproven, Detail: fmt.Sprintf("the schemas are too large or too recursive to compare within %d steps", maxSteps)}}
	}
	return sortChanges(slices.Clone(out))
}

// comparer proves that values of the old schema satisfy the new one,
// place by place, and collects what it cannot prove.
type comparer struct {
	old, new  *document
	steps     int
	exhausted bool
	// active holds the comparisons in progress. Meeting one again deeper
	// in the instance assumes it holds (the instance is finite, so the
	// assumption is discharged by the outer comparison); meeting it again
	// at the same place is a loop that consumes nothing.
	active map[string]activeEntry
	// memo holds finished comparisons, with paths relative to where they
	// were made.
	memo map[string][]Change
	// depth counts nested comparisons; inst counts how many of them went
	// down into the instance.
	depth, inst int
	// lowest is the smallest depth of an active comparison assumed to
	// hold while computing the current one; results relying on an
	// assumption still open are not memoized.
	lowest int
}

type activeEntry struct{ depth, inst int }

// spend takes one step of the budget.
func (c *comparer) spend() bool {
	if c.steps <= 0 {
		c.exhausted = true
		return false
	}
	c.steps--
	return true
}

func (c *comparer) tooComplex(at string) []Change {
	return []Change{{Schema: at, Reason: Unproven, Detail: "the schemas are too large or too recursive to compare here"}}
}

// descend compares a place one level down in the instance. The caller
// prefixes the returned paths with the token that leads there.
func (c *comparer) descend(old []node, nw node, strict bool) []Change {
	c.inst++
	defer func() { c.inst-- }()
	return c.sub(old, nw, strict)
}

// sub compares the values the old nodes accept at one place with the new
// node there. Paths in the result are relative to that place.
func (c *comparer) sub(old []node, nw node, strict bool) []Change {
	if !c.spend() || c.depth >= maxNesting {
		c.exhausted = true
		return c.tooComplex(nw.ptr)
	}
	key := memoKey(old, nw, strict)
	if fs, ok := c.memo[key]; ok {
		return fs
	}
	if e, ok := c.active[key]; ok {
		if e.inst == c.inst {
			return []Change{{Schema: nw.ptr, Reason: Unproven, Detail: "the schema refers back to itself without going deeper into the value"}}
		}
		c.lowest = min(c.lowest, e.depth)
		return nil
	}
	c.depth++
	d := c.depth
	c.active[key] = activeEntry{depth: d, inst: c.inst}
	saved := c.lowest
	c.lowest = math.MaxInt
	fs := c.compare(old, nw, strict)
	delete(c.active, key)
	if len(fs) > 0 || c.lowest >= d {
		c.memo[key] = fs
	}
	c.lowest = min(saved, c.lowest)
	c.depth--
	return fs
}

func memoKey(old []node, nw node, strict bool) string {
	keys := make([]string, len(old))
	for i, n := range old {
		keys[i] = n.key()
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var b strings.Builder
	if strict {
		b.WriteString("strict|")
	}
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('|')
	}
	b.WriteString("=>")
	b.WriteString(nw.key())
	return b.String()
}

// compare splits the old side into cases and checks every new atom
// against each.
func (c *comparer) compare(old []node, nw node, strict bool) []Change {
	oc := flatten(old, false)
	if oc.unsat {
		return nil
	}
	nc := flatten([]node{nw}, true)
	var out []Change
	for _, part := range split(oc) {
		cs := newCase(part)
		if cs.empty() {
			continue
		}
		out = append(out, c.compareCase(cs, nc, strict)...)
		if c.exhausted {
			break
		}
	}
	return sortChanges(out)
}

func (c *comparer) compareCase(cs *oldCase, nc conj, strict bool) []Change {
	if nc.unsat {
		if nc.cycle {
			return []Change{{Schema: nc.unsatAt, Reason: Unproven, Detail: "the new schema's references form a cycle here, so it refuses every value"}}
		}
		return []Change{{Schema: nc.unsatAt, Reason: Removed, Detail: "the new schema is false here: no value is accepted"}}
	}
	var out []Change
	for _, n := range nc.opaque {
		if !c.hasEqualAtom(cs, n) {
			out = append(out, Change{Schema: n.ptr, Reason: Unproven, Detail: "a dynamic reference whose target depends on the evaluation path cannot be compared"})
		}
	}
	for _, a := range nc.atoms {
		out = append(out, c.atom(cs, a, strict)...)
		if c.exhausted {
			break
		}
	}
	return out
}

// atom checks every keyword of one new atom against an old case.
func (c *comparer) atom(cs *oldCase, a node, strict bool) []Change {
	if a.types != 0 {
		return c.syntheticTypes(cs, a)
	}
	var out []Change
	out = append(out, c.typeKeyword(cs, a)...)
	out = append(out, c.enumKeywords(cs, a)...)
	out = append(out, c.numberKeywords(cs, a)...)
	out = append(out, c.stringKeywords(cs, a)...)
	out = append(out, c.arrayKeywords(cs, a, strict)...)
	out = append(out, c.objectKeywords(cs, a, strict)...)
	out = append(out, c.logicKeywords(cs, a, strict)...)
	return out
}

// proves reports whether the old nodes are shown to satisfy the new node
// with nothing to report.
func (c *comparer) proves(old []node, nw node, strict bool) bool {
	return len(c.sub(old, nw, strict)) == 0 && !c.exhausted
}
