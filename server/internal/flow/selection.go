package flow

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/convergehq/converge/server/internal/schema"
)

// step is one selection: a key, or a list index when isIndex.
type step struct {
	key     string
	index   int64
	isIndex bool
}

func (s step) token() string {
	if s.isIndex {
		return strconv.FormatInt(s.index, 10)
	}
	return s.key
}

// selection is a path into status or spec written with field names and
// constant indexes only, such as status.vpc["id"] or spec.subnets[0].
// Knowing it lets a failed evaluation say exactly which value is missing.
type selection struct {
	root  string // "status" or "spec"
	steps []step
}

func (s selection) with(st step) selection {
	return selection{root: s.root, steps: append(slices.Clip(s.steps), st)}
}

// findSelections maps the ID of every expression node that is a selection
// to that selection.
func findSelections(e celast.Expr) map[int64]selection {
	found := map[int64]selection{}
	visitSelections(e, nil, found)
	return found
}

// visitSelections records the selections in e and returns e's own, if it
// is one. hidden lists the comprehension variables in scope, which hide
// status or spec when named so.
func visitSelections(e celast.Expr, hidden []string, found map[int64]selection) (selection, bool) {
	var own selection
	ok := false
	switch e.Kind() {
	case celast.IdentKind:
		name := e.AsIdent()
		if (name == "status" || name == "spec") && !slices.Contains(hidden, name) {
			return selection{root: name}, true
		}
		return own, false
	case celast.SelectKind:
		s := e.AsSelect()
		base, isSel := visitSelections(s.Operand(), hidden, found)
		if isSel && !s.IsTestOnly() {
			own, ok = base.with(step{key: s.FieldName()}), true
		}
	case celast.CallKind:
		own, ok = visitCall(e.AsCall(), hidden, found)
	case celast.ComprehensionKind:
		c := e.AsComprehension()
		visitSelections(c.IterRange(), hidden, found)
		visitSelections(c.AccuInit(), hidden, found)
		inner := append(slices.Clip(hidden), c.IterVar(), c.AccuVar())
		if c.HasIterVar2() {
			inner = append(inner, c.IterVar2())
		}
		visitSelections(c.LoopCondition(), inner, found)
		visitSelections(c.LoopStep(), inner, found)
		visitSelections(c.Result(), inner, found)
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			visitSelections(el, hidden, found)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			visitSelections(en.AsMapEntry().Key(), hidden, found)
			visitSelections(en.AsMapEntry().Value(), hidden, found)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			visitSelections(f.AsStructField().Value(), hidden, found)
		}
	}
	if ok {
		found[e.ID()] = own
	}
	return own, ok
}

// visitCall handles x[k] with a constant k as a selection step.
func visitCall(c celast.CallExpr, hidden []string, found map[int64]selection) (selection, bool) {
	if c.IsMemberFunction() {
		visitSelections(c.Target(), hidden, found)
	}
	var base selection
	isSel := false
	for i, a := range c.Args() {
		s, ok := visitSelections(a, hidden, found)
		if i == 0 {
			base, isSel = s, ok
		}
	}
	args := c.Args()
	if c.FunctionName() != operators.Index || len(args) != 2 || !isSel || args[1].Kind() != celast.LiteralKind {
		return selection{}, false
	}
	switch k := args[1].AsLiteral().(type) {
	case types.String:
		return base.with(step{key: string(k)}), true
	case types.Int:
		return base.with(step{index: int64(k), isIndex: true}), true
	case types.Uint:
		if uint64(k) <= math.MaxInt64 {
			return base.with(step{index: int64(k), isIndex: true}), true
		}
	}
	return selection{}, false
}

// follow walks steps from doc, the document named root. When a step
// cannot be taken it returns an error wrapping ErrMissing if the value may
// still appear (a missing key or index, or a null on the way), or a
// mismatch message if the document has the wrong shape for the path.
func follow(root string, doc any, steps []step) (v any, missingErr error, mismatch string) {
	tokens := make([]string, len(steps))
	for i, st := range steps {
		tokens[i] = st.token()
	}
	where := func(n int) string {
		if n == 0 {
			return root
		}
		return root + " at " + schema.JoinPointer("", tokens[:n]...)
	}
	cur := doc
	for i, st := range steps {
		switch node := cur.(type) {
		case nil:
			return nil, missing("%s has no %s yet (%s is null)", root, schema.JoinPointer("", tokens[:i+1]...), where(i)), ""
		case map[string]any:
			if st.isIndex {
				return nil, nil, fmt.Sprintf("%s is an object, not a list; it has no index %d", where(i), st.index)
			}
			next, ok := node[st.key]
			if !ok {
				return nil, missing("%s has no %s yet", root, schema.JoinPointer("", tokens[:i+1]...)), ""
			}
			cur = next
		case []any:
			idx, ok := st.index, st.isIndex
			if !ok {
				n, isIdx := arrayIndex(st.key)
				if !isIdx {
					return nil, nil, fmt.Sprintf("%s is a list, not an object; it has no key %q", where(i), st.key)
				}
				idx, ok = int64(n), true
			}
			if idx < 0 {
				return nil, nil, fmt.Sprintf("index %d into %s is negative", idx, where(i))
			}
			if idx >= int64(len(node)) {
				return nil, missing("%s has no %s yet (%s has %d elements)", root, schema.JoinPointer("", tokens[:i+1]...), where(i), len(node)), ""
			}
			cur = node[idx]
		default:
			return nil, nil, fmt.Sprintf("%s is %s, so it has no %q", where(i), describe(cur), st.token())
		}
	}
	return cur, nil, ""
}
