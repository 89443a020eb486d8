package converge

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

// trace records the calls middleware and handlers make, in order.
type trace struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.steps = append(tr.steps, s)
}

func (tr *trace) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.steps
	tr.steps = nil
	return out
}

// named records entering and leaving, with the error it saw.
func (tr *trace) named(name string) Middleware {
	return func(next HandlerFunc) HandlerFunc {
		return func(ctx context.Context, t *Task) (*Result, error) {
			tr.add(name + ">")
			res, err := next(ctx, t)
			if err != nil {
				tr.add("<" + name + " " + err.Error())
			} else {
				tr.add("<" + name)
			}
			return res, err
		}
	}
}

// TestMiddlewareOrderAndReach: the worker's middleware runs outermost, in
// the order given (several options add up), then the handler's; it wraps
// the worker's own failures too, and a panic reaches it as the error the
// worker reports.
func TestMiddlewareOrderAndReach(t *testing.T) {
	tr := &trace{}
	f := newFakeServer(t)
	w := newTestWorker(f, WithMiddleware(tr.named("a"), nil, tr.named("b")), WithMiddleware(tr.named("c")))
	w.Handle("greeting", 1, "reconcile", func(context.Context, *Task) (*Result, error) {
		tr.add("handler")
		return nil, nil
	}, WithMiddleware(tr.named("h1"), tr.named("h2")))
	w.Handle("greeting", 1, "boom", func(context.Context, *Task) (*Result, error) { panic("kaboom") })
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	run := func(id int64, reaction string) []string {
		t.Helper()
		task := greetingTask(id, `{}`)
		task.Reaction = reaction
		s.task(t, task)
		s.result(t)
		return tr.take()
	}
	want := []string{"a>", "b>", "c>", "h1>", "h2>", "handler", "<h2", "<h1", "<c", "<b", "<a"}
	if got := run(1, "reconcile"); !slices.Equal(got, want) {
		t.Errorf("calls = %q; want %q", got, want)
	}
	got := run(2, "missing")
	if len(got) != 6 || got[0] != "a>" || !strings.Contains(got[5], `<a converge: worker "test-worker" has no handler`) {
		t.Errorf("calls for an unregistered reaction = %q; want the worker's middleware around its failure", got)
	}
	want = []string{"a>", "b>", "c>", "<c panic: kaboom", "<b panic: kaboom", "<a panic: kaboom"}
	if got := run(3, "boom"); !slices.Equal(got, want) {
		t.Errorf("calls for a panic = %q; want %q", got, want)
	}
}

// TestMiddlewareShapesTheResult: middleware may change the result and the
// error, what it returns is what the worker checks and reports, and a
// panic in middleware is reported as a handler's.
func TestMiddlewareShapesTheResult(t *testing.T) {
	errRefused := errors.New("refused")
	cases := []struct {
		name    string
		mw      Middleware
		handler HandlerFunc
		message string // the failure wanted, or "" for a success
		check   func(*testing.T, *Outcome)
	}{
		{name: "adds a condition", mw: func(next HandlerFunc) HandlerFunc {
			return func(ctx context.Context, t *Task) (*Result, error) {
				res, err := next(ctx, t)
				res.Conditions = append(res.Conditions, Condition{Type: "Traced", Status: ConditionTrue})
				return res, err
			}
		}, handler: func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]int{"n": 1}}, nil
		}, check: func(t *testing.T, o *Outcome) {
			if string(o.Status) != `{"n":1}` || len(o.Conditions) != 1 || o.Conditions[0].Type != "Traced" {
				t.Errorf("outcome = %+v; want the status and the added condition", o)
			}
		}},
		{name: "makes an error terminal", mw: func(next HandlerFunc) HandlerFunc {
			return func(ctx context.Context, t *Task) (*Result, error) {
				res, err := next(ctx, t)
				return res, Terminal(err)
			}
		}, handler: func(context.Context, *Task) (*Result, error) { return nil, errRefused }, message: "refused"},
		{name: "short-circuits", mw: func(HandlerFunc) HandlerFunc {
			return func(context.Context, *Task) (*Result, error) { return &Result{Status: []int{1}}, nil }
		}, handler: nil, message: "converge: result status: must be a JSON object, got an array"},
		{name: "panics", mw: func(HandlerFunc) HandlerFunc {
			return func(context.Context, *Task) (*Result, error) { panic("in middleware") }
		}, message: "panic: in middleware"},
		{name: "returns nil", mw: func(HandlerFunc) HandlerFunc { return nil }, message: "converge: middleware 1 of 1 returned a nil handler"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewWorker("http://unused", WithMiddleware(c.mw))
			if err != nil {
				t.Fatal(err)
			}
			h := c.handler
			if h == nil {
				h = func(context.Context, *Task) (*Result, error) { return nil, nil }
			}
			wrapped := w.wrap(h, nil)
			out, err := RunHandler(context.Background(), wrapped, &Task{Attempt: PanicRetries + 1})
			if c.message == "" {
				if err != nil {
					t.Fatal(err)
				}
				c.check(t, out)
				return
			}
			if err == nil || err.Error() != c.message || !IsTerminal(err) {
				t.Fatalf("error = %v (terminal %v); want the terminal %q", err, IsTerminal(err), c.message)
			}
		})
	}
}
