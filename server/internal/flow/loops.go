package flow

import (
	"fmt"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"
)

// Loops are the only way a CEL expression repeats work, so charging for
// them bounds an evaluation. Each comprehension is charged when its range
// has been computed, before it iterates: the range's size times the
// number of expression nodes in the loop's condition and step. A loop
// that stops early (exists) is charged in full, which keeps the charge
// independent of how the planner arranges the loop body.
//
// CEL's own runtime cost tracking (cel.CostLimit) is not used: in cel-go
// v0.32 its bookkeeping grows with every iteration, so a comprehension
// over n elements takes time in n² (a filter over 200,000 elements took
// about a minute instead of milliseconds) and some loops are not charged
// at all.

// loopWeights maps the range of every comprehension in e to what one
// iteration costs.
func loopWeights(e celast.Expr) map[int64]int64 {
	weights := map[int64]int64{}
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(n celast.Expr) {
		if n.Kind() != celast.ComprehensionKind {
			return
		}
		c := n.AsComprehension()
		weights[c.IterRange().ID()] = int64(countNodes(c.LoopCondition()) + countNodes(c.LoopStep()))
	}))
	return weights
}

func countNodes(e celast.Expr) int {
	n := 0
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(celast.Expr) { n++ }))
	return n
}

// chargeLoops wraps the range of each comprehension so that computing it
// charges the loop to the evaluation.
func chargeLoops(weights map[int64]int64) cel.ProgramOption {
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if w, ok := weights[i.ID()]; ok {
			return &chargedRange{InterpretableV2: i, weight: w}, nil
		}
		return i, nil
	})
}

// budgetName resolves to the evaluation's *vars; "@" keeps it out of
// reach of expressions.
const budgetName = "@flow.vars"

// errLoopCost stops an evaluation that would exceed MaxLoopCost.
// Evaluation recovers it as a cancellation, as it does CEL's own cost
// limit.
var errLoopCost = interpreter.EvalCancelledError{
	Cause:   interpreter.CostLimitExceeded,
	Message: fmt.Sprintf("exceeded the loop cost limit of %d (flow.MaxLoopCost)", MaxLoopCost),
}

type chargedRange struct {
	interpreter.InterpretableV2
	weight int64
}

// Exec implements interpreter.InterpretableV2.
func (r *chargedRange) Exec(frame *interpreter.ExecutionFrame) ref.Val {
	v := r.InterpretableV2.Exec(frame)
	sizer, ok := v.(traits.Sizer)
	if !ok {
		return v
	}
	n, ok := sizer.Size().(types.Int)
	if !ok || n <= 0 {
		return v
	}
	if b, ok := frame.ResolveName(budgetName); ok {
		if in, ok := b.(*vars); ok {
			in.loopCost += int64(n) * r.weight
			if in.loopCost > MaxLoopCost {
				panic(errLoopCost)
			}
		}
	}
	return v
}

// Eval implements interpreter.Interpretable.
func (r *chargedRange) Eval(a interpreter.Activation) ref.Val {
	return r.Exec(interpreter.AsFrame(a))
}
