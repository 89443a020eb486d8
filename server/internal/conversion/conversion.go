// Package conversion compiles and runs a kind version's conversion: the
// CEL expression that turns a spec of an earlier version into a spec of
// this one. It is checked when the manifest is applied, with `spec` typed
// by the old version's spec_schema and the value checked against the new
// one, so a misspelled field or a wrong type is refused before any
// resource is moved.
package conversion

import (
	"errors"
	"fmt"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"

	"github.com/convergehq/converge/internal/celschema"
	"github.com/convergehq/converge/server/internal/flow"
)

// Conversion is a checked conversion, safe for concurrent use.
type Conversion struct {
	// From and To are the versions it converts between.
	From, To int32
	expr     string
	ast      *cel.Ast
	prg      cel.Program
}

// Problem is one thing wrong with a conversion, at a position of its
// expression when it has one (Line and Column from 1; 0 for none).
type Problem struct {
	Line, Column int
	Message      string
}

// Error lists what is wrong with a conversion, or why running it failed.
// Field is the manifest field ("conversion.expr").
type Error struct {
	Field    string
	Problems []Problem
}

func (e *Error) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		at := ""
		if p.Line > 0 {
			at = fmt.Sprintf("%d:%d: ", p.Line, p.Column)
		}
		parts[i] = e.Field + ": " + at + p.Message
	}
	return strings.Join(parts, "; ")
}

// FromVersion is the version a conversion declared with from converts
// from: from itself, or the version before to when from is 0.
func FromVersion(from, to int32) int32 {
	if from == 0 {
		return to - 1
	}
	return from
}

// CheckVersions refuses a conversion that does not come from an earlier
// version.
func CheckVersions(from, to int32) error {
	if f := FromVersion(from, to); f < 1 || f >= to {
		return &Error{Field: "conversion.from_version", Problems: []Problem{{Message: fmt.Sprintf(
			"converts from version %d, which is not an earlier version than kind_version %d", f, to)}}}
	}
	return nil
}

// Compile checks expr with spec typed by fromSchema (the old version's
// spec_schema, decoded JSON) and its value against toSchema (the new
// version's). A failure is an *Error listing each problem with its
// position.
func Compile(from, to int32, expr string, fromSchema, toSchema map[string]any) (c *Conversion, err error) {
	fail := func(ps ...Problem) (*Conversion, error) {
		return nil, &Error{Field: "conversion.expr", Problems: ps}
	}
	// The CEL compiler is not ours to vouch for: a panic on some input
	// comes back as a problem with the conversion.
	defer func() {
		if r := recover(); r != nil {
			c, err = fail(Problem{Message: fmt.Sprintf("the CEL compiler failed on this expression: %v", r)})
		}
	}()
	if err := CheckVersions(from, to); err != nil {
		return nil, err
	}
	ts, err := celschema.New()
	if err != nil {
		return nil, err
	}
	specT := ts.FromSchema(fmt.Sprintf("v%d.spec", FromVersion(from, to)), any(fromSchema))
	env, err := flow.TypedEnv(ts, ts.Base(), map[string]*types.Type{"spec": specT})
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	a, iss := env.Compile(expr)
	if iss.Err() != nil {
		var ps []Problem
		for _, e := range iss.Errors() {
			line, col := e.Location.Line(), e.Location.Column()+1
			if line < 1 {
				line, col = 0, 0
			}
			ps = append(ps, Problem{Line: line, Column: col, Message: e.Message})
		}
		return fail(ps...)
	}
	rc := &resultChecker{ts: ts, ast: a, to: to}
	rc.check(a.NativeRep().Expr(), any(toSchema), "")
	if len(rc.problems) > 0 {
		return fail(rc.problems...)
	}
	prg, err := flow.TypedProgram(env, a)
	if err != nil {
		return fail(Problem{Message: err.Error()})
	}
	return &Conversion{From: FromVersion(from, to), To: to, expr: expr, ast: a, prg: prg}, nil
}

// Convert runs the conversion on one spec (decoded JSON). The result is a
// JSON object; the caller validates it against the new spec_schema. A
// failure is an *Error with the position of the part that failed.
func (c *Conversion) Convert(spec map[string]any) (map[string]any, error) {
	if spec == nil {
		spec = map[string]any{}
	}
	out, err := flow.RunTyped(c.prg, map[string]any{"spec": spec})
	if err != nil {
		return nil, c.runError(err)
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, &Error{Field: "conversion.expr", Problems: []Problem{{Message: fmt.Sprintf("the value is %T, not an object", out)}}}
	}
	return m, nil
}

func (c *Conversion) runError(err error) error {
	p := Problem{Message: err.Error()}
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) {
		p.Message = fmt.Sprintf("stopped: %s (limits: cost %d, %v)", cancelled.Message, flow.CostLimit, flow.EvalTimeout)
	}
	var celErr *types.Err
	if errors.As(err, &celErr) && celErr.NodeID() != 0 {
		loc := c.ast.NativeRep().SourceInfo().GetStartLocation(celErr.NodeID())
		if loc.Line() > 0 {
			p.Line, p.Column = loc.Line(), loc.Column()+1
		}
	}
	return &Error{Field: "conversion.expr", Problems: []Problem{p}}
}
