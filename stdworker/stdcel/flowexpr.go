package stdcel

import (
	"encoding/json"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/parser"
)

// translate rewrites an expression that reads a dependency into the flow
// expression the server evaluates over that dependency's status and spec:
// `dep.status.x` becomes `status.x`, and everything known when composing
// (schema, forEach variables) becomes a literal. The server's flows see
// only the dependency, so this is how an instance's inputs reach them.
func translate(env *cel.Env, src, dep string, known map[string]any) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("rewriting the expression for the server failed: %v", r)
		}
	}()
	a, iss := env.Parse(src)
	if iss.Err() != nil {
		return "", iss.Err()
	}
	nat := a.NativeRep()
	rw := &rewriter{fac: ast.NewExprFactory(), dep: dep, known: known, next: 1 << 40}
	rw.rewrite(nat.Expr())
	for _, m := range nat.SourceInfo().MacroCalls() {
		rw.rewrite(m)
	}
	if rw.err != nil {
		return "", rw.err
	}
	return parser.Unparse(nat.Expr(), nat.SourceInfo())
}

type rewriter struct {
	fac   ast.ExprFactory
	dep   string
	known map[string]any
	next  int64
	err   error
}

func (r *rewriter) id() int64 {
	r.next++
	return r.next
}

func (r *rewriter) rewrite(x ast.Expr) {
	if x == nil {
		return
	}
	switch x.Kind() {
	case ast.IdentKind:
		r.substitute(x)
	case ast.SelectKind:
		if r.substitute(x) {
			return
		}
		s := x.AsSelect()
		if op := s.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == r.dep && !s.IsTestOnly() {
			x.SetKindCase(r.fac.NewIdent(x.ID(), s.FieldName()))
			return
		}
		r.rewrite(s.Operand())
	case ast.CallKind:
		c := x.AsCall()
		if c.IsMemberFunction() {
			r.rewrite(c.Target())
		}
		for _, a := range c.Args() {
			r.rewrite(a)
		}
	case ast.ComprehensionKind:
		c := x.AsComprehension()
		for _, y := range []ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			r.rewrite(y)
		}
	case ast.ListKind:
		for _, y := range x.AsList().Elements() {
			r.rewrite(y)
		}
	case ast.MapKind:
		for _, e := range x.AsMap().Entries() {
			r.rewrite(e.AsMapEntry().Key())
			r.rewrite(e.AsMapEntry().Value())
		}
	case ast.StructKind:
		for _, f := range x.AsStruct().Fields() {
			r.rewrite(f.AsStructField().Value())
		}
	}
}

// substitute replaces the longest known part of a selection chain rooted
// at a known variable (schema.spec.a.b) with its value as a literal.
func (r *rewriter) substitute(x ast.Expr) bool {
	var chain []ast.Expr
	cur := x
	for cur.Kind() == ast.SelectKind && !cur.AsSelect().IsTestOnly() {
		chain = append(chain, cur)
		cur = cur.AsSelect().Operand()
	}
	if cur.Kind() != ast.IdentKind {
		return false
	}
	v, ok := r.known[cur.AsIdent()]
	if !ok {
		return false
	}
	node := cur
	for i := len(chain) - 1; i >= 0; i-- {
		m, isMap := v.(map[string]any)
		if !isMap {
			break
		}
		nv, has := m[chain[i].AsSelect().FieldName()]
		if !has {
			break
		}
		v, node = nv, chain[i]
	}
	lit, err := r.literal(v, 0)
	if err != nil {
		r.err = err
		return true
	}
	// Selections past the known part stay, and select from the literal.
	node.SetKindCase(lit)
	return true
}

// literal is the CEL literal expression of a decoded JSON value, with
// object keys in order so the same value always reads the same.
func (r *rewriter) literal(v any, depth int) (ast.Expr, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("the value nests deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		return r.fac.NewLiteral(r.id(), types.NullValue), nil
	case bool:
		return r.fac.NewLiteral(r.id(), types.Bool(x)), nil
	case string:
		return r.fac.NewLiteral(r.id(), types.String(x)), nil
	case json.Number:
		return r.number(numberValue(x))
	case float64:
		return r.number(floatValue(x))
	case int:
		return r.fac.NewLiteral(r.id(), types.Int(x)), nil
	case int64:
		return r.fac.NewLiteral(r.id(), types.Int(x)), nil
	case []any:
		elems := make([]ast.Expr, len(x))
		for i, e := range x {
			le, err := r.literal(e, depth+1)
			if err != nil {
				return nil, err
			}
			elems[i] = le
		}
		return r.fac.NewList(r.id(), elems, nil), nil
	case map[string]any:
		entries := make([]ast.EntryExpr, 0, len(x))
		for _, k := range sortedKeys(x) {
			le, err := r.literal(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			entries = append(entries, r.fac.NewMapEntry(r.id(), r.fac.NewLiteral(r.id(), types.String(k)), le, false))
		}
		return r.fac.NewMap(r.id(), entries), nil
	}
	return nil, fmt.Errorf("a %T cannot be written into an expression", v)
}

func (r *rewriter) number(v any) (ast.Expr, error) {
	switch n := v.(type) {
	case types.Int:
		return r.fac.NewLiteral(r.id(), n), nil
	case types.Double:
		return r.fac.NewLiteral(r.id(), n), nil
	}
	return nil, fmt.Errorf("%v is not a number CEL can hold", v)
}

// celString quotes s as a CEL string literal.
func celString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\u%04x", c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// gate makes a flow's value wait for the dependency's readyWhen: the flow
// yields optional.none() (which the server treats as "not there yet", so
// the dependent waits) until every condition holds.
func gate(value string, valueOptional bool, conds []string) string {
	if len(conds) == 0 {
		return value
	}
	for i, c := range conds {
		conds[i] = "(" + c + ")"
	}
	v := "optional.of(" + value + ")"
	if valueOptional {
		v = "(" + value + ")"
	}
	return strings.Join(conds, " && ") + " ? " + v + " : optional.none()"
}

func isOptional(t *types.Type) bool {
	return t.Kind() == types.OpaqueKind && t.TypeName() == "optional_type"
}
