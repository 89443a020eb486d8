package flow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMissing is wrapped by the error Eval returns when the flow's source is
// not there yet: the pointer resolves to nothing, a CEL expression selects
// a key or index the document does not have, or it yields optional.none().
// The dependency may still produce it, so the caller waits rather than
// failing the dependent. The wrapping error's message names what is
// missing, e.g. "status has no /account_id yet".
var ErrMissing = errors.New("flow source is not there yet")

type missingError struct{ msg string }

func (e *missingError) Error() string { return e.msg }
func (e *missingError) Unwrap() error { return ErrMissing }

func missing(format string, args ...any) error {
	return &missingError{msg: fmt.Sprintf(format, args...)}
}

// Problem is one thing wrong with a flow, found by Compile.
type Problem struct {
	// Field is "from", "expr" or "to".
	Field string
	// Line and Column locate the problem in expr, both counted from 1
	// (Column in characters); 0 when the problem has no position.
	Line, Column int
	// Message says what is wrong.
	Message string
}

// String renders the problem like a compiler: `expr:1:8: message` or
// `to: message`.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.Field)
	if p.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(p.Line))
		b.WriteString(":")
		b.WriteString(strconv.Itoa(p.Column))
	}
	b.WriteString(": ")
	b.WriteString(p.Message)
	return b.String()
}

// CompileError is returned by Compile for a flow that cannot run. It lists
// every problem found, in field order: from, expr, to.
type CompileError struct {
	Problems []Problem
}

// Error renders one problem per line.
func (e *CompileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// EvalError is a flow that failed for a reason other than a missing
// source: a type error (selecting a key from a string), a runtime error
// such as division by zero, a result with no JSON form, or the cost limit.
// Evaluating the same flow on the same inputs fails the same way, so
// retrying does not help until the dependency's status or spec changes.
type EvalError struct {
	// Field is "expr" for a CEL flow and "from" for a pointer flow.
	Field string
	// Source is the expression or pointer.
	Source string
	// Line and Column locate the failing part of an expression, both
	// counted from 1; 0 when the failure has no single place.
	Line, Column int
	// Message says what went wrong.
	Message string
}

// Error renders `expr "status.n + 1" at 1:10: message` or
// `from "/a/b": message`.
func (e *EvalError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s %q at %d:%d: %s", e.Field, e.Source, e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("%s %q: %s", e.Field, e.Source, e.Message)
}
