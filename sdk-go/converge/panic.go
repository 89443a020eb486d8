package converge

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
)

// PanicRetries is how many times a task whose handler panics is retried.
// A panic on one of the first PanicRetries attempts at a task
// ([Task.Attempt] 1 to PanicRetries) is a transient failure, since the
// panic may come from a passing condition; a panic on a later attempt is
// terminal, so a handler that always panics on some input pins its
// resource as Failed instead of being retried forever.
const PanicRetries = 3

// PanicError is the failure reported for a handler (or a [Middleware])
// that panicked. Its message is "panic: " and the panic value; it unwraps
// to the value when the value is an error. A worker logs the stack once
// per piece of work ([Task.DedupToken]), not on every retry.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, as runtime/debug.Stack
	// formats it.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// panicFailure is the error reported for a panic on attempt: transient for
// the first PanicRetries attempts, then terminal.
func panicFailure(pe *PanicError, attempt int) error {
	if attempt > PanicRetries {
		return Terminal(pe)
	}
	return pe
}

// call runs h on t and turns a panic into the failure the worker reports,
// passing it to onPanic (when not nil) first. A handler that ends its
// goroutine (runtime.Goexit) is not recovered: the caller sees that.
func call(ctx context.Context, h HandlerFunc, t *Task, onPanic func(*Task, *PanicError)) (res *Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			pe := &PanicError{Value: v, Stack: debug.Stack()}
			if onPanic != nil {
				onPanic(t, pe)
			}
			res, err = nil, panicFailure(pe, t.Attempt)
		}
	}()
	return h(ctx, t)
}

// guard recovers h's panics on the handler's side of any middleware, so
// middleware sees a panic as the error the worker will report.
func (w *Worker) guard(h HandlerFunc) HandlerFunc {
	return func(ctx context.Context, t *Task) (*Result, error) {
		return call(ctx, h, t, w.logPanic)
	}
}

// logPanic logs a panic with its stack, the first time a piece of work
// panics: retries of the same work panic the same way, and their
// failures are logged anyway (see logFailure).
func (w *Worker) logPanic(t *Task, pe *PanicError) {
	if !w.panics.first(panicKey(t)) {
		return
	}
	w.log.Error("converge: handler panicked", "kind", t.Kind, "version", t.KindVersion,
		"reaction", t.Reaction, "namespace", t.Namespace, "name", t.Name, "generation", t.Generation,
		"attempt", t.Attempt, "panic", pe.Value, "stack", string(pe.Stack))
}

// panicKey identifies the piece of work a task is an attempt at.
func panicKey(t *Task) string {
	if t.DedupToken != "" {
		return "token:" + t.DedupToken
	}
	return "resource:" + t.UID + "/" + t.Reaction + "/" + strconv.FormatInt(t.Generation, 10)
}

// maxPanicKeys bounds the pieces of work panicLog remembers; beyond it the
// oldest is forgotten, and its next panic is logged with a stack again.
const maxPanicKeys = 1024

// panicLog remembers which pieces of work have had their panic logged. Its
// zero value is ready to use.
type panicLog struct {
	mu    sync.Mutex
	seen  map[string]struct{}
	order []string // ring of the keys in seen, oldest at next once full
	next  int
}

// first reports whether key is new, and remembers it.
func (p *panicLog) first(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.seen[key]; ok {
		return false
	}
	if p.seen == nil {
		p.seen = make(map[string]struct{})
	}
	if len(p.order) < maxPanicKeys {
		p.order = append(p.order, key)
	} else {
		delete(p.seen, p.order[p.next])
		p.order[p.next] = key
		p.next = (p.next + 1) % maxPanicKeys
	}
	p.seen[key] = struct{}{}
	return true
}
