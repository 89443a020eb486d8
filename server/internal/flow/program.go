package flow

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Program is a compiled flow: where its value comes from and where it
// goes. It is immutable and safe for concurrent use.
type Program struct {
	from       Pointer
	fromSteps  []step
	expr       string
	prg        cel.Program // nil for a pointer flow
	ast        *cel.Ast
	selections map[int64]selection
	loops      bool // whether prg has comprehensions, the only thing that can run long
	to         Pointer
}

// Compile checks a flow and prepares it to run. Exactly one of from (a
// JSON pointer into the dependency's status; "" means unset) and expr (a
// CEL expression over the dependency's status and spec) must be set; to
// is a JSON pointer into the dependent's spec; it may not be the root nor
// append with "-", since a flow must write the same place every time.
// An expression must parse, type-check with status and spec as JSON
// objects, not produce bytes or a type, and not cost more than CostLimit
// on empty inputs. A failure is a *CompileError listing every problem
// with its field and, inside expr, its line and column.
func Compile(from, expr, to string) (*Program, error) {
	p := &Program{expr: expr}
	var problems []Problem
	switch {
	case from == "" && expr == "":
		problems = append(problems, Problem{Field: "from", Message: "a flow needs a source: set from (a JSON pointer into the dependency's status) or expr (a CEL expression)"})
	case from != "" && expr != "":
		problems = append(problems, Problem{Field: "expr", Message: "set from or expr, not both"})
	case from != "":
		ptr, err := ParsePointer(from)
		if err != nil {
			problems = append(problems, Problem{Field: "from", Message: err.Error()})
		}
		p.from = ptr
		p.fromSteps = make([]step, len(ptr.tokens))
		for i, t := range ptr.tokens {
			p.fromSteps[i] = step{key: t}
		}
	default:
		problems = append(problems, p.compileExpr()...)
	}
	if to == "" {
		problems = append(problems, Problem{Field: "to", Message: `must point into the spec, e.g. "/account_id"; "" would replace the whole spec`})
	} else if ptr, err := ParsePointer(to); err != nil {
		problems = append(problems, Problem{Field: "to", Message: err.Error()})
	} else if slices.Contains(ptr.tokens, "-") {
		problems = append(problems, Problem{Field: "to", Message: fmt.Sprintf(
			`pointer %q appends with "-", so every sync would add another element; point at an index or a key`, to)})
	} else {
		p.to = ptr
	}
	if len(problems) > 0 {
		return nil, &CompileError{Problems: problems}
	}
	return p, nil
}

// compileExpr compiles p.expr into p.prg and reports its problems.
func (p *Program) compileExpr() (problems []Problem) {
	// The CEL compiler is not ours to vouch for: a panic on some input
	// must still come back as a problem with the flow.
	defer func() {
		if r := recover(); r != nil {
			problems = []Problem{{Field: "expr", Message: fmt.Sprintf("the CEL compiler failed on this expression: %v", r)}}
		}
	}()
	env, err := celEnv()
	if err != nil {
		return []Problem{{Field: "expr", Message: "the CEL environment failed to build: " + err.Error()}}
	}
	ast, iss := env.Compile(p.expr)
	if iss.Err() != nil {
		for _, e := range iss.Errors() {
			line, col := e.Location.Line(), e.Location.Column()+1
			if line < 1 {
				line, col = 0, 0
			}
			problems = append(problems, Problem{Field: "expr", Line: line, Column: col, Message: e.Message})
		}
		return problems
	}
	switch out := ast.OutputType(); out.Kind() {
	case types.BytesKind:
		problems = append(problems, Problem{Field: "expr", Message: "the result is bytes, which JSON cannot hold; convert with base64.encode(...) or string(...)"})
	case types.TypeKind:
		problems = append(problems, Problem{Field: "expr", Message: "the result is a type, which JSON cannot hold; convert with string(...)"})
	}
	// Inputs may be empty, so the least an expression can cost is what it
	// costs on its own; above the limit it could never succeed.
	if est, err := env.EstimateCost(ast, unknownSizes{}); err == nil && est.Min > CostLimit {
		problems = append(problems, Problem{Field: "expr", Message: fmt.Sprintf(
			"costs at least %d to evaluate, more than the limit of %d", est.Min, CostLimit)})
	}
	if len(problems) > 0 {
		return problems
	}
	ranges := loopRanges(ast.NativeRep().Expr())
	prg, err := env.Program(ast, append(programOptions[:len(programOptions):len(programOptions)], countIterations(ranges))...)
	if err != nil {
		return []Problem{{Field: "expr", Message: err.Error()}}
	}
	p.prg, p.ast, p.loops = prg, ast, len(ranges) > 0
	p.selections = findSelections(ast.NativeRep().Expr())
	return nil
}

// To is where the flow writes its value in the dependent's spec.
func (p *Program) To() Pointer {
	return p.to
}

// emptyObject stands in for a dependency with no status (or spec) yet.
// CEL never modifies its inputs, so one instance is shared.
var emptyObject = map[string]any{}

// Eval computes the flow's value from the dependency's decoded status and
// spec (map[string]any; nil means none yet). The value shares nothing with
// them. When the source is not there yet, the error wraps ErrMissing and
// names what is missing; any other failure is an *EvalError.
//
// A pointer flow returns the value as found, null included. A CEL flow
// returns plain decoded JSON: map[string]any, []any, string, bool, nil and
// json.Number for every number (the package documentation lists the
// conversions).
func (p *Program) Eval(status, spec any) (any, error) {
	if status == nil {
		status = emptyObject
	}
	if spec == nil {
		spec = emptyObject
	}
	if p.prg == nil {
		return p.evalPointer(status)
	}
	out, err := p.run(&vars{status: status, spec: spec})
	if err != nil {
		return nil, p.explain(err, status, spec)
	}
	v, err := toJSON(out)
	var none *errNoValue
	switch {
	case errors.As(err, &none):
		return nil, missing("expr %q has no value yet: %v", p.expr, err)
	case err != nil:
		return nil, &EvalError{Field: "expr", Source: p.expr, Message: err.Error()}
	}
	return v, nil
}

// run evaluates the CEL program, under EvalTimeout when it has loops.
func (p *Program) run(in *vars) (ref.Val, error) {
	if !p.loops {
		out, _, err := p.prg.Eval(in)
		return out, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), EvalTimeout)
	defer cancel()
	out, _, err := p.prg.ContextEval(ctx, in)
	return out, err
}

func (p *Program) evalPointer(status any) (any, error) {
	if v, ok := p.from.Get(status); ok {
		return copyJSON(v), nil
	}
	_, miss, mismatch := follow("status", status, p.fromSteps)
	if miss != nil {
		return nil, miss
	}
	return nil, &EvalError{Field: "from", Source: p.from.String(), Message: mismatch}
}

// explain turns a CEL evaluation error into ErrMissing or an *EvalError.
func (p *Program) explain(err error, status, spec any) error {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		if cancelled.Message == errTooManyIterations.Message {
			return p.evalError(0, cancelled.Message)
		}
		return p.evalError(0, fmt.Sprintf("exceeded the cost limit of %d (flow.CostLimit)", CostLimit))
	}
	if errors.Is(err, interpreter.InterruptError{}) {
		return p.evalError(0, fmt.Sprintf("did not finish within %v (flow.EvalTimeout)", EvalTimeout))
	}
	var id int64
	var celErr *types.Err
	if errors.As(err, &celErr) {
		id = celErr.NodeID()
	}
	if sel, ok := p.selections[id]; ok {
		doc := status
		if sel.root == "spec" {
			doc = spec
		}
		if _, miss, mismatch := follow(sel.root, doc, sel.steps); miss != nil {
			return miss
		} else if mismatch != "" {
			return p.evalError(id, mismatch)
		}
	}
	msg := err.Error()
	if key, ok := strings.CutPrefix(msg, "no such key: "); ok {
		return missing("no key %q yet%s in expr %q", key, p.at(id), p.expr)
	}
	if idx, ok := strings.CutPrefix(msg, "index out of bounds: "); ok {
		return missing("no index %s yet%s in expr %q", idx, p.at(id), p.expr)
	}
	return p.evalError(id, msg)
}

func (p *Program) evalError(id int64, msg string) *EvalError {
	e := &EvalError{Field: "expr", Source: p.expr, Message: msg}
	e.Line, e.Column = p.position(id)
	return e
}

// at renders the position of node id as " at 1:8", or "" when unknown.
func (p *Program) at(id int64) string {
	if line, col := p.position(id); line > 0 {
		return fmt.Sprintf(" at %d:%d", line, col)
	}
	return ""
}

func (p *Program) position(id int64) (line, col int) {
	if id == 0 {
		return 0, 0
	}
	loc := p.ast.NativeRep().SourceInfo().GetStartLocation(id)
	if loc.Line() < 1 {
		return 0, 0
	}
	return loc.Line(), loc.Column() + 1
}
