package stdstarlark

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/convergehq/converge/sdk-go/converge"
)

// Limits on a run.
const (
	// DefaultMaxSteps is the default step limit of one run: enough for a
	// program composing thousands of children, small enough that an endless
	// loop fails within seconds.
	DefaultMaxSteps = 10_000_000
	// maxPrints bounds the print() calls one run logs.
	maxPrints = 100
	// maxPrintBytes bounds one logged print().
	maxPrintBytes = 1024
	// maxStackFrames bounds the call stack shown in an error.
	maxStackFrames = 8
	// maxExtraSteps bounds the steps run past the limit while looking for
	// one with a source line.
	maxExtraSteps = 1000
)

// hasLine reports whether the thread's current step maps to a source line
// of its own (some instructions map only to their function's def).
func hasLine(th *starlark.Thread) bool {
	if th.CallStackDepth() == 0 {
		return true
	}
	fr := th.DebugFrame(0)
	fn, ok := fr.Callable().(*starlark.Function)
	return !ok || fr.Position() != fn.Position()
}

// program is a bundle as one kind version runs it.
type program struct {
	dir      string // the bundle directory, absolute
	main     string // the main file, relative to dir
	maxSteps uint64
	programs *programs
	log      *slog.Logger
}

// call loads the bundle's main file and calls its function fn with arg. It
// returns the result and fn's definition (for errors about the result).
// Errors are terminal except when the bundle cannot be read at all or the
// task's context ends.
func (p *program) call(ctx context.Context, resource, fn string, arg starlark.Value) (starlark.Value, *starlark.Function, error) {
	root, err := os.OpenRoot(p.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("settings.dir: the bundle directory: %w", err)
	}
	defer root.Close()
	l := &loader{files: root.FS(), programs: p.programs, modules: map[string]*module{}}

	var stepsOut atomic.Bool
	prints, extraSteps := 0, 0
	thread := &starlark.Thread{
		Name: resource,
		Load: l.load,
		Print: func(_ *starlark.Thread, msg string) {
			if prints++; prints <= maxPrints {
				if len(msg) > maxPrintBytes {
					msg = msg[:maxPrintBytes] + "…"
				}
				p.log.Info("print", "resource", resource, "msg", msg)
			}
		},
		OnMaxSteps: func(th *starlark.Thread) {
			// Stop on a step that has a source line, so the error names
			// where the loop is rather than the function's def.
			if extraSteps++; extraSteps < maxExtraSteps && !hasLine(th) {
				return
			}
			stepsOut.Store(true)
			th.Cancel("step limit")
		},
	}
	thread.SetMaxExecutionSteps(p.maxSteps)
	stop := context.AfterFunc(ctx, func() { thread.Cancel("the task's deadline passed") })
	defer stop()

	fail := func(err error) error {
		switch {
		case stepsOut.Load():
			return converge.Terminal(fmt.Errorf("%s: step limit: the program ran more than %d steps (an endless loop?); settings.max_steps raises the limit", where(err), p.maxSteps))
		case ctx.Err() != nil:
			return fmt.Errorf("%s: stopped: %w", where(err), ctx.Err())
		}
		return converge.Terminal(errors.New(describe(err)))
	}

	globals, err := l.exec(thread, p.main)
	if err != nil {
		return nil, nil, fail(err)
	}
	v, ok := globals[fn]
	if !ok {
		return nil, nil, converge.Terminal(fmt.Errorf("%s: defines no %s(ctx) function", p.main, fn))
	}
	f, ok := v.(*starlark.Function)
	if !ok {
		return nil, nil, converge.Terminal(fmt.Errorf("%s: %s is a %s, not a function", p.main, fn, v.Type()))
	}
	if f.NumParams() != 1 {
		return nil, nil, converge.Terminal(fmt.Errorf("%s: %s(ctx) must take exactly one parameter, not %d", f.Position(), fn, f.NumParams()))
	}
	out, err := starlark.Call(thread, f, starlark.Tuple{arg}, nil)
	if err != nil {
		return nil, nil, fail(err)
	}
	return out, f, nil
}

// where returns the position an error happened at (see position), or "?".
func where(err error) string {
	if pos, ok := position(err); ok {
		return pos.String()
	}
	return "?"
}

// position is where an error happened: the innermost frame of an
// evaluation error with a source position, or a syntax error's position.
func position(err error) (syntax.Position, bool) {
	if eval := innermost(err); eval != nil {
		for i := len(eval.CallStack) - 1; i >= 0; i-- {
			if pos := eval.CallStack[i].Pos; pos.IsValid() && pos.Filename() != "<builtin>" {
				return pos, true
			}
		}
	}
	var syn syntax.Error
	if errors.As(err, &syn) {
		return syn.Pos, true
	}
	var res resolve.ErrorList
	if errors.As(err, &res) && len(res) > 0 {
		return res[0].Pos, true
	}
	return syntax.Position{}, false
}

// innermost returns the deepest evaluation error in err's chain: an error
// in a loaded file is wrapped in one at the load statement.
func innermost(err error) *starlark.EvalError {
	var deepest *starlark.EvalError
	for err != nil {
		var eval *starlark.EvalError
		if !errors.As(err, &eval) {
			break
		}
		deepest = eval
		err = eval.Unwrap()
	}
	return deepest
}

// describe renders a Starlark error as "file:line:col: message", with the
// call stack of an evaluation error after it.
func describe(err error) string {
	var eval *starlark.EvalError
	if errors.As(err, &eval) {
		msg := where(err) + ": "
		if n := len(eval.CallStack); n > 0 && eval.CallStack[n-1].Pos.Filename() == "<builtin>" && eval.CallStack[n-1].Name != "fail" {
			// An error of a helper: name it, as in "child: output limit: …".
			msg += eval.CallStack[n-1].Name + ": "
		}
		msg += eval.Msg
		var frames []string
		for _, fr := range eval.CallStack {
			if fr.Pos.IsValid() && fr.Pos.Filename() != "<builtin>" {
				frames = append(frames, fr.Pos.String()+" in "+fr.Name)
			}
		}
		if len(frames) > 1 {
			if len(frames) > maxStackFrames {
				frames = append(frames[:1], frames[len(frames)-maxStackFrames+1:]...)
				frames[0] += " …"
			}
			msg += " (stack: " + strings.Join(frames, " → ") + ")"
		}
		return msg
	}
	var res resolve.ErrorList
	if errors.As(err, &res) {
		parts := make([]string, len(res))
		for i, e := range res {
			parts[i] = e.Error()
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}
