package stdcel

import (
	"fmt"
	"regexp"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
)

// expr is one checked `${...}` expression.
type expr struct {
	src  string
	path string
	ast  *cel.Ast
	prg  cel.Program
	out  *types.Type
	// refs are the resource ids the expression reads, sorted.
	refs []string
}

// scope says what an expression may read.
type scope struct {
	env *cel.Env
	// ids are every resource id of the graph; allowed the ones this
	// expression may read (nil: none).
	ids     map[string]bool
	allowed map[string]bool
	// flows marks a child's template: what a string reads of other
	// resources flows along one edge, so it may read one resource at most.
	flows bool
	// collections allows reading forEach resources, as lists.
	collections bool
	// readySelf is the resource a readyWhen belongs to; other ids are
	// not declared there.
	readySelf string
	// what names the place for messages, e.g. "a name template".
	what string
	// reserved are the names no comprehension variable may take.
	reserved map[string]bool
}

var undeclared = regexp.MustCompile(`^undeclared reference to '([^']*)'`)

// compileExpr parses and type-checks src, and checks what it reads.
// Problems go to ps with src's positions; nil means it did not compile.
func (c *checker) compileExpr(sc *scope, path, src string) *expr {
	before := len(c.ps.list)
	e := c.compileExprRaw(sc, path, src)
	if e == nil && len(c.ps.list) == before {
		c.ps.add(path, "the expression does not compile")
	}
	return e
}

func (c *checker) compileExprRaw(sc *scope, path, src string) (out *expr) {
	defer func() {
		if r := recover(); r != nil {
			c.ps.add(path, "the CEL compiler failed on this expression: %v", r)
			out = nil
		}
	}()
	a, iss := sc.env.Compile(src)
	if iss.Err() != nil {
		for _, e := range iss.Errors() {
			line, col := e.Location.Line(), e.Location.Column()+1
			if line < 1 {
				line, col = 0, 0
			}
			msg := e.Message
			if m := undeclared.FindStringSubmatch(msg); m != nil {
				msg = c.explainUndeclared(m[1], sc)
			}
			c.ps.at(path, line, col, "%s", msg)
		}
		return nil
	}
	e := &expr{src: src, path: path, ast: a, out: a.OutputType()}
	ok := c.checkRefs(sc, e)
	if !ok {
		return nil
	}
	if est, err := sc.env.EstimateCost(a, unknownSizes{}); err == nil && est.Min > CostLimit {
		c.ps.add(path, "costs at least %d to evaluate, more than the limit of %d", est.Min, CostLimit)
		return nil
	}
	prg, err := sc.env.Program(a, programOptions...)
	if err != nil {
		c.ps.add(path, "%v", err)
		return nil
	}
	e.prg = prg
	return e
}

func (c *checker) explainUndeclared(name string, sc *scope) string {
	ids := sortedKeys(sc.ids)
	if sc.ids[name] && sc.readySelf != "" {
		return fmt.Sprintf("readyWhen of %q cannot read resource %q: it reads only %s itself, schema and forEach variables", sc.readySelf, name, sc.readySelf)
	}
	return fmt.Sprintf("unknown name %q: the instance's inputs are schema.spec.<field>, and the graph's resource ids are %s",
		name, strings.Join(ids, ", "))
}

// checkRefs finds the resource ids e reads and checks each use: an id is
// read through `.status` or `.spec`, only where sc allows it, and no
// comprehension variable shadows a graph name.
func (c *checker) checkRefs(sc *scope, e *expr) bool {
	nat := e.ast.NativeRep()
	info := nat.SourceInfo()
	ok := true
	refs := map[string]bool{}
	report := func(id int64, format string, args ...any) {
		loc := info.GetStartLocation(id)
		line, col := loc.Line(), loc.Column()+1
		if line < 1 {
			line, col = 0, 0
		}
		c.ps.at(e.path, line, col, format, args...)
		ok = false
	}
	// bound counts the comprehension variables in scope: a name bound
	// there is the variable, already reported if it hides a graph name.
	bound := map[string]int{}
	var walk func(x ast.Expr, parent ast.Expr)
	walk = func(x ast.Expr, parent ast.Expr) {
		switch x.Kind() {
		case ast.IdentKind:
			name := x.AsIdent()
			if !sc.ids[name] || bound[name] > 0 {
				return
			}
			if sc.allowed == nil || !sc.allowed[name] {
				report(x.ID(), "%s cannot read resource %q%s", sc.what, name, allowedHint(sc))
				return
			}
			if c.collection[name] && !sc.collections {
				report(x.ID(), "resource %q expands with forEach into many children; only the status projection may read it (as a list)", name)
				return
			}
			refs[name] = true
			if parent == nil || parent.Kind() != ast.SelectKind && !isOptSelect(parent) {
				if c.collection[name] {
					return
				}
				report(x.ID(), "read %s through %s.status.<field> or %s.spec.<field>", name, name, name)
			}
		case ast.SelectKind:
			s := x.AsSelect()
			if op := s.Operand(); op.Kind() == ast.IdentKind && sc.ids[op.AsIdent()] && bound[op.AsIdent()] == 0 && !c.collection[op.AsIdent()] {
				if f := s.FieldName(); f != "status" && f != "spec" {
					report(x.ID(), "resource %q has only status and spec", op.AsIdent())
				}
			}
			walk(s.Operand(), x)
		case ast.CallKind:
			call := x.AsCall()
			if call.IsMemberFunction() {
				walk(call.Target(), x)
			}
			for _, a := range call.Args() {
				walk(a, x)
			}
		case ast.ComprehensionKind:
			comp := x.AsComprehension()
			for _, v := range []string{comp.IterVar(), comp.IterVar2()} {
				if v != "" && sc.reserved[v] {
					report(x.ID(), "the variable %q hides a name of the graph; pick another", v)
				}
			}
			walk(comp.IterRange(), x)
			walk(comp.AccuInit(), x)
			vars := []string{comp.IterVar(), comp.IterVar2(), comp.AccuVar()}
			for _, v := range vars {
				bound[v]++
			}
			walk(comp.LoopCondition(), x)
			walk(comp.LoopStep(), x)
			walk(comp.Result(), x)
			for _, v := range vars {
				bound[v]--
			}
		case ast.ListKind:
			for _, y := range x.AsList().Elements() {
				walk(y, x)
			}
		case ast.MapKind:
			for _, en := range x.AsMap().Entries() {
				me := en.AsMapEntry()
				walk(me.Key(), x)
				walk(me.Value(), x)
			}
		case ast.StructKind:
			for _, f := range x.AsStruct().Fields() {
				walk(f.AsStructField().Value(), x)
			}
		}
	}
	walk(nat.Expr(), nil)
	e.refs = sortedKeys(refs)
	return ok
}

// isOptSelect reports whether x is an optional field selection, a.?b.
func isOptSelect(x ast.Expr) bool {
	return x.Kind() == ast.CallKind && x.AsCall().FunctionName() == "_?._"
}

func allowedHint(sc *scope) string {
	if len(sc.allowed) == 0 {
		return " (only schema and forEach variables)"
	}
	return fmt.Sprintf(" (only %s)", strings.Join(sortedKeys(sc.allowed), ", "))
}

// interpolable reports whether a value of type t can be written into a
// string with string(...).
func interpolable(t *types.Type) bool {
	switch t.Kind() {
	case types.DynKind, types.AnyKind, types.StringKind, types.IntKind, types.UintKind, types.DoubleKind,
		types.BoolKind, types.TimestampKind, types.DurationKind, types.BytesKind:
		return true
	}
	return false
}
