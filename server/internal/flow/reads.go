package flow

import (
	"slices"

	celast "cel.dev/cel-go/common/ast"
)

// Read is a value a flow reads from its dependency: Root "status" or
// "spec", and the path under it. A read of an object reads everything
// under it.
type Read struct {
	Root   string
	Tokens []string
}

// Reads returns the values the flow reads: its pointer into the status,
// or the selections its expression makes (status.db.host), keeping only
// the longest of those that extend one another. A selection the
// expression does not spell out (a computed index, status passed whole
// to a function) reads from where its spelled-out part ends, so Reads
// never misses a value the flow can reach.
func (p *Program) Reads() []Read {
	if p.prg == nil {
		return []Read{{Root: "status", Tokens: slices.Clone(p.from.tokens)}}
	}
	var found []selection
	collectReads(p.ast.NativeRep().Expr(), nil, &found)
	var out []Read
	for _, f := range found {
		tokens := make([]string, len(f.steps))
		for i, st := range f.steps {
			tokens[i] = st.token()
		}
		r := Read{Root: f.root, Tokens: tokens}
		if !slices.ContainsFunc(out, func(x Read) bool { return x.Root == r.Root && slices.Equal(x.Tokens, r.Tokens) }) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Read) int {
		if a.Root != b.Root {
			if a.Root < b.Root {
				return -1
			}
			return 1
		}
		return slices.Compare(a.Tokens, b.Tokens)
	})
	return out
}

// Target returns the tokens of the pointer the flow writes.
func (p *Program) Target() []string { return slices.Clone(p.to.tokens) }

// selectionOf returns e's selection if e is one as a whole: status or
// spec, a field of a selection, or a selection indexed by a constant.
func selectionOf(e celast.Expr, hidden []string) (selection, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		name := e.AsIdent()
		if (name == "status" || name == "spec") && !slices.Contains(hidden, name) {
			return selection{root: name}, true
		}
	case celast.SelectKind:
		s := e.AsSelect()
		if s.IsTestOnly() {
			return selection{}, false
		}
		if base, ok := selectionOf(s.Operand(), hidden); ok {
			return base.with(step{key: s.FieldName()}), true
		}
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() || len(c.Args()) != 2 || c.Args()[1].Kind() != celast.LiteralKind {
			return selection{}, false
		}
		if _, ok := selectionOf(c.Args()[0], hidden); ok {
			return visitCall(c, hidden, map[int64]selection{})
		}
	}
	return selection{}, false
}

// collectReads appends the outermost selections of e: each is a value
// the expression reads whole.
func collectReads(e celast.Expr, hidden []string, out *[]selection) {
	if s, ok := selectionOf(e, hidden); ok {
		*out = append(*out, s)
		return
	}
	switch e.Kind() {
	case celast.SelectKind:
		collectReads(e.AsSelect().Operand(), hidden, out)
	case celast.CallKind:
		c := e.AsCall()
		if c.IsMemberFunction() {
			collectReads(c.Target(), hidden, out)
		}
		for _, a := range c.Args() {
			collectReads(a, hidden, out)
		}
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		collectReads(c.IterRange(), hidden, out)
		collectReads(c.AccuInit(), hidden, out)
		inner := append(slices.Clip(hidden), c.IterVar(), c.AccuVar())
		if c.HasIterVar2() {
			inner = append(inner, c.IterVar2())
		}
		collectReads(c.LoopCondition(), inner, out)
		collectReads(c.LoopStep(), inner, out)
		collectReads(c.Result(), inner, out)
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			collectReads(el, hidden, out)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			collectReads(en.AsMapEntry().Key(), hidden, out)
			collectReads(en.AsMapEntry().Value(), hidden, out)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			collectReads(f.AsStructField().Value(), hidden, out)
		}
	}
}
