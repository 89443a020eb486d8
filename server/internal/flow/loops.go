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

// CEL's runtime cost tracking (cel.CostLimit) knows what each function
// costs, but in cel-go v0.32 its bookkeeping grows with every loop
// iteration, so a comprehension over n elements takes time in n² (a
// filter over 200,000 elements takes about a minute rather than a few
// milliseconds), and some loop bodies, such as filter(x, false), are not
// charged at all. Capping the iterations keeps that overhead to a few
// milliseconds and also bounds the loops it misses. Each comprehension is charged the size of the list or map it
// ranges over as soon as that is computed, before it iterates, so the cap
// does not depend on how the planner arranges the loop body; a loop that
// stops early (exists) is charged in full.

// loopRanges returns the IDs of the range expressions of all
// comprehensions in e.
func loopRanges(e celast.Expr) map[int64]bool {
	ranges := map[int64]bool{}
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(n celast.Expr) {
		if n.Kind() == celast.ComprehensionKind {
			ranges[n.AsComprehension().IterRange().ID()] = true
		}
	}))
	return ranges
}

// countIterations wraps the range of each comprehension so that
// computing it charges the loop's iterations to the evaluation.
func countIterations(ranges map[int64]bool) cel.ProgramOption {
	return cel.CustomDecoratorV2(func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		if ranges[i.ID()] {
			return &countedRange{i}, nil
		}
		return i, nil
	})
}

// budgetName resolves to the evaluation's *vars; "@" keeps it out of
// reach of expressions.
const budgetName = "@flow.vars"

// errTooManyIterations stops an evaluation whose loops would exceed
// MaxLoopIterations. Evaluation recovers it as a cancellation, as it does
// CEL's own cost limit.
var errTooManyIterations = interpreter.EvalCancelledError{
	Cause:   interpreter.CostLimitExceeded,
	Message: fmt.Sprintf("its loops exceed %d iterations (flow.MaxLoopIterations)", MaxLoopIterations),
}

type countedRange struct {
	interpreter.InterpretableV2
}

// Exec implements interpreter.InterpretableV2.
func (r *countedRange) Exec(frame *interpreter.ExecutionFrame) ref.Val {
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
			in.iterations += int64(n)
			if in.iterations > MaxLoopIterations {
				panic(errTooManyIterations)
			}
		}
	}
	return v
}

// Eval implements interpreter.Interpretable.
func (r *countedRange) Eval(a interpreter.Activation) ref.Val {
	return r.Exec(interpreter.AsFrame(a))
}
