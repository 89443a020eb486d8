package stdcel

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/convergehq/converge/internal/celschema"
)

type tmplKind int

const (
	tLiteral tmplKind = iota
	tObject
	tArray
	tExpr   // a string that is exactly one ${...}: the value is the expression's
	tInterp // a string mixing text and ${...}: the value is a string
)

// tmpl is a checked template value: a JSON value whose strings may hold
// expressions, with the schema it must satisfy.
type tmpl struct {
	kind   tmplKind
	lit    any
	keys   []string
	fields map[string]*tmpl
	items  []*tmpl
	whole  *expr
	parts  []part
	// schema is the JSON Schema the value must satisfy (nil: any), and
	// required whether the enclosing object requires it.
	schema   any
	required bool
	// refs are the resource ids the string reads (tExpr and tInterp).
	refs []string
}

// part is a piece of an interpolated string: text, or an expression.
type part struct {
	text string
	e    *expr
}

// template checks v, a value of the graph spec at path, against schema sch.
func (c *checker) template(sc *scope, path string, v any, sch any) *tmpl {
	sm, _ := sch.(map[string]any)
	t := &tmpl{schema: sch}
	switch x := v.(type) {
	case map[string]any:
		t.kind = tObject
		c.literalFits(path, "object", sm)
		t.keys = sortedKeys(x)
		t.fields = map[string]*tmpl{}
		props, closed, extra := celschema.Fields(sm)
		req := celschema.Required(sm)
		for _, k := range t.keys {
			kp := fieldPath(path, k)
			if hasExpr(k) {
				c.ps.add(kp, "a key cannot hold an expression; only values can")
			}
			ks, known := props[k]
			if !known {
				if closed {
					c.ps.add(kp, "unknown field %q: the schema declares %s", k, quoteList(sortedKeys(props)))
				}
				ks = extra
			}
			child := c.template(sc, kp, x[k], ks)
			child.required = slices.Contains(req, k)
			t.fields[k] = child
		}
		for _, r := range req {
			if _, ok := x[r]; !ok {
				c.ps.add(path, "missing required field %q", r)
			}
		}
	case []any:
		t.kind = tArray
		c.literalFits(path, "array", sm)
		var items any
		if sm != nil {
			items = sm["items"]
		}
		for i, e := range x {
			child := c.template(sc, indexPath(path, i), e, items)
			child.required = true
			t.items = append(t.items, child)
		}
	case string:
		c.templateString(sc, path, x, t, sm)
	default:
		t.kind = tLiteral
		t.lit = v
		c.literalFits(path, literalType(v), sm)
	}
	return t
}

func (c *checker) templateString(sc *scope, path, s string, t *tmpl, sm map[string]any) {
	segs, err := parseTemplate(s)
	if err != nil {
		c.ps.add(path, "%v", err)
		t.kind, t.lit = tLiteral, s
		return
	}
	var exprs int
	for _, sg := range segs {
		if sg.isExpr {
			exprs++
		}
	}
	switch {
	case exprs == 0:
		t.kind, t.lit = tLiteral, s
		if len(segs) == 1 {
			t.lit = segs[0].text // `$${` unescaped
		}
		c.literalFits(path, "string", sm)
		return
	case len(segs) == 1:
		t.kind = tExpr
		t.whole = c.compileExpr(sc, path, segs[0].text)
		if t.whole == nil {
			return
		}
		if why := celschema.Mismatch(t.whole.out, sm); why != "" {
			c.ps.at(path, 1, 1, "%s", why)
		}
		t.refs = t.whole.refs
	default:
		t.kind = tInterp
		c.literalFits(path, "string", sm)
		refs := map[string]bool{}
		for _, sg := range segs {
			if !sg.isExpr {
				t.parts = append(t.parts, part{text: sg.text})
				continue
			}
			e := c.compileExpr(sc, path, sg.text)
			if e == nil {
				continue
			}
			if !interpolable(e.out) {
				c.ps.at(path, 1, 1, "${%s} is %s, which cannot be written into a string; write a string, number or bool", sg.text, celschema.TypeName(e.out))
			}
			for _, r := range e.refs {
				refs[r] = true
			}
			t.parts = append(t.parts, part{e: e})
		}
		t.refs = sortedKeys(refs)
	}
	if sc.flows && len(t.refs) > 1 {
		c.ps.add(path, "reads %s: a value flows along one edge from one resource, so one field may read at most one other resource", quoteList(t.refs))
	}
}

// literalFits reports a literal of JSON type got where schema sm wants
// something else.
func (c *checker) literalFits(path, got string, sm map[string]any) {
	if sm == nil {
		return
	}
	allowed := celschema.Types(sm)
	if len(allowed) == 0 || slices.Contains(allowed, got) || got == "integer" && slices.Contains(allowed, "number") {
		return
	}
	c.ps.add(path, "the value is %s %s, but the schema wants %s", article(got), got, strings.Join(allowed, " or "))
}

func article(s string) string {
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an"
	}
	return "a"
}

func literalType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "integer"
		}
		if f, err := x.Float64(); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	}
	return fmt.Sprintf("%T", v)
}

func quoteList(xs []string) string {
	if len(xs) == 0 {
		return "no fields"
	}
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}
