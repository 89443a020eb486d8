package compat

import (
	"math/big"
	"strconv"
	"unicode/utf8"

	"github.com/convergehq/converge/server/internal/schema"
)

// verdict is what evaluating a schema on a concrete value decides. The
// evaluator answers pass or fail only where it agrees with the validator
// exactly; anything it does not model (unasserted-looking formats, the
// unevaluated* keywords, dynamic references it cannot pin down, very deep
// nesting) is unknown.
type verdict int8

const (
	unknown verdict = iota
	pass
	fail
)

func (v verdict) and(w verdict) verdict {
	switch {
	case v == fail || w == fail:
		return fail
	case v == unknown || w == unknown:
		return unknown
	}
	return pass
}

func (v verdict) not() verdict {
	switch v {
	case pass:
		return fail
	case fail:
		return pass
	}
	return unknown
}

func verdictOf(ok bool) verdict {
	if ok {
		return pass
	}
	return fail
}

// maxEvalDepth bounds evaluation through references and nested values;
// maxEvalSteps bounds the work of one evaluation, which references can
// make exponential.
const (
	maxEvalDepth = 48
	maxEvalSteps = 4096
)

// evaluator evaluates subschemas on concrete values within a budget.
type evaluator struct {
	steps int
	// inPlace holds the subschemas being evaluated on the current value;
	// meeting one again is a reference loop, which is left unknown.
	inPlace map[string]bool
}

// eval evaluates a subschema on a concrete value.
func eval(n node, v any, depth int) verdict {
	e := &evaluator{steps: maxEvalSteps, inPlace: map[string]bool{}}
	return e.eval(n, v, depth)
}

// evalKeyword evaluates one keyword of a subschema on a value.
func evalKeyword(n node, kw string, v any, depth int) verdict {
	e := &evaluator{steps: maxEvalSteps, inPlace: map[string]bool{}}
	return e.keyword(n, kw, v, depth)
}

func (e *evaluator) eval(n node, v any, depth int) verdict {
	r := e.plain(n, v, depth)
	if n.neg {
		return r.not()
	}
	return r
}

// descend evaluates a subschema on a part of the value.
func (e *evaluator) descend(n node, v any, depth int) verdict {
	saved := e.inPlace
	e.inPlace = map[string]bool{}
	defer func() { e.inPlace = saved }()
	return e.eval(n, v, depth)
}

func (e *evaluator) plain(n node, v any, depth int) verdict {
	if depth > maxEvalDepth || e.steps <= 0 {
		return unknown
	}
	e.steps--
	id := identity(n)
	if e.inPlace[id] {
		return unknown
	}
	e.inPlace[id] = true
	defer delete(e.inPlace, id)
	if n.types != 0 && typeOfValue(v)&n.types == 0 {
		return fail
	}
	switch s := n.v.(type) {
	case bool:
		return verdictOf(s)
	case map[string]any:
		r := pass
		for kw := range s {
			if r = r.and(e.keyword(n, kw, v, depth)); r == fail {
				return fail
			}
		}
		return r
	}
	return unknown
}

func (e *evaluator) keyword(n node, kw string, v any, depth int) verdict {
	m := n.m()
	arg := m[kw]
	switch kw {
	case "type":
		return verdictOf(typeOfValue(v)&typesOf(arg) != 0)
	case "enum":
		vs, _ := arg.([]any)
		return verdictOf(containsValue(vs, v))
	case "const":
		return verdictOf(schema.EqualJSON(arg, v))
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf":
		return evalNumber(kw, arg, v)
	case "minLength", "maxLength", "pattern", "format":
		return evalString(kw, arg, v)
	case "$ref":
		ref, _ := arg.(string)
		if n.doc == nil {
			return unknown
		}
		t, ok := n.doc.resolve(n.ptr, ref)
		if !ok {
			return unknown
		}
		return e.eval(t, v, depth+1)
	case "$dynamicRef", "$recursiveRef":
		if n.doc == nil {
			return unknown
		}
		ts, ok := n.doc.resolveStatic(node{doc: n.doc, ptr: n.ptr, v: map[string]any{kw: arg}})
		if !ok || len(ts) != 1 {
			return unknown
		}
		return e.eval(ts[0], v, depth+1)
	case "allOf", "anyOf", "oneOf":
		return e.evalLogic(n, kw, v, depth)
	case "not":
		c, ok := n.child("not")
		if !ok {
			return unknown
		}
		return e.eval(c, v, depth+1).not()
	case "if":
		return e.evalIf(n, v, depth)
	}
	switch typeOfValue(v) {
	case tArray:
		return e.evalArray(n, kw, v.([]any), depth)
	case tObject:
		return e.evalObject(n, kw, v.(map[string]any), depth)
	}
	return pass // every other keyword applies only to arrays or objects, or asserts nothing
}

func evalNumber(kw string, arg, v any) verdict {
	x, ok := toRat(v)
	if !ok {
		return pass
	}
	bound, ok := toRat(arg)
	if !ok {
		return unknown
	}
	c := x.Cmp(bound)
	switch kw {
	case "minimum":
		return verdictOf(c >= 0)
	case "maximum":
		return verdictOf(c <= 0)
	case "exclusiveMinimum":
		return verdictOf(c > 0)
	case "exclusiveMaximum":
		return verdictOf(c < 0)
	}
	if bound.Sign() == 0 {
		return unknown
	}
	return verdictOf(new(big.Rat).Quo(x, bound).IsInt())
}

func evalString(kw string, arg, v any) verdict {
	s, ok := v.(string)
	if !ok {
		return pass
	}
	switch kw {
	case "minLength", "maxLength":
		n, ok := intArg(arg)
		if !ok {
			return pass
		}
		l := utf8.RuneCountInString(s)
		if kw == "minLength" {
			return verdictOf(l >= n)
		}
		return verdictOf(l <= n)
	case "pattern":
		re, ok := compilePattern(arg)
		if !ok {
			return unknown
		}
		return verdictOf(re.MatchString(s))
	}
	f, _ := arg.(string)
	if !assertedFormat(f) {
		return pass
	}
	return unknown
}

func (e *evaluator) evalLogic(n node, kw string, v any, depth int) verdict {
	arr, _ := n.m()[kw].([]any)
	passes, unknowns := 0, 0
	for i := range arr {
		c, ok := n.child(kw, strconv.Itoa(i))
		if !ok {
			return unknown
		}
		switch e.eval(c, v, depth+1) {
		case pass:
			passes++
		case unknown:
			unknowns++
		default:
			if kw == "allOf" {
				return fail
			}
		}
	}
	switch kw {
	case "allOf":
		if unknowns > 0 {
			return unknown
		}
		return pass
	case "anyOf":
		if passes > 0 {
			return pass
		}
		if unknowns > 0 {
			return unknown
		}
		return fail
	}
	if unknowns > 0 {
		if passes > 1 {
			return fail
		}
		return unknown
	}
	return verdictOf(passes == 1)
}

func (e *evaluator) evalIf(n node, v any, depth int) verdict {
	cond, ok := n.child("if")
	if !ok {
		return unknown
	}
	branch := func(kw string) verdict {
		c, ok := n.child(kw)
		if !ok {
			return pass
		}
		return e.eval(c, v, depth+1)
	}
	switch e.eval(cond, v, depth+1) {
	case pass:
		return branch("then")
	case fail:
		return branch("else")
	}
	if branch("then") == pass && branch("else") == pass {
		return pass
	}
	return unknown
}
