package converge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// TestPanicTurnsTerminalAfterPanicRetries: a panic is a transient failure
// "panic: <value>" on the first PanicRetries attempts and terminal after;
// the error carries the value and the stack, and unwraps a panicked error.
func TestPanicTurnsTerminalAfterPanicRetries(t *testing.T) {
	boom := func(context.Context, *Task) (*Result, error) { panic("boom") }
	for attempt := 1; attempt <= PanicRetries+2; attempt++ {
		_, err := RunHandler(context.Background(), boom, &Task{Attempt: attempt})
		if err == nil || err.Error() != "panic: boom" {
			t.Fatalf("attempt %d: error = %v; want panic: boom", attempt, err)
		}
		if want := attempt > PanicRetries; IsTerminal(err) != want {
			t.Errorf("attempt %d: terminal = %v; want %v", attempt, IsTerminal(err), want)
		}
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "boom" || !strings.Contains(string(pe.Stack), "panic_test.go") {
			t.Errorf("attempt %d: PanicError = %+v; want the value and a stack through the handler", attempt, pe)
		}
	}

	_, err := RunHandler(context.Background(), func(context.Context, *Task) (*Result, error) {
		panic(fmt.Errorf("wrapped: %w", io.ErrUnexpectedEOF))
	}, &Task{Attempt: 1})
	if !errors.Is(err, io.ErrUnexpectedEOF) || err.Error() != "panic: wrapped: unexpected EOF" {
		t.Errorf("panic(err): error = %v; want it to say and unwrap to the panicked error", err)
	}
}

// TestWorkerLogsAPanicsStackOncePerWork: the worker logs the stack the
// first time a piece of work (a dedup token) panics, not on its retries;
// every failure is still logged, and the attempt after PanicRetries
// fails terminally.
func TestWorkerLogsAPanicsStackOncePerWork(t *testing.T) {
	f := newFakeServer(t)
	logs := &syncBuffer{}
	w := newTestWorker(f, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.Handle("greeting", 1, "reconcile", func(context.Context, *Task) (*Result, error) { panic("kaboom") })
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	send := func(id int64, token string, attempt int32) *reported {
		t.Helper()
		task := greetingTask(id, `{}`)
		task.DedupToken, task.Attempt = token, attempt
		s.task(t, task)
		r := s.result(t)
		if r.GetLease().GetTaskId() != id || r.GetError() == nil {
			t.Fatalf("result = %v; want task %d's failure", r, id)
		}
		return &reported{r.GetError().GetMessage(), r.GetError().GetTerminal()}
	}
	for attempt := int32(1); attempt <= PanicRetries+1; attempt++ {
		got := send(int64(attempt), "work-1", attempt)
		if want := (&reported{"panic: kaboom", attempt > PanicRetries}); *got != *want {
			t.Errorf("attempt %d: %+v; want %+v", attempt, got, want)
		}
	}
	send(10, "work-2", 1)

	out := logs.String()
	if n := strings.Count(out, "converge: handler panicked"); n != 2 {
		t.Errorf("%d stack logs; want 2, one per piece of work:\n%s", n, out)
	}
	if n := strings.Count(out, "converge: task failed"); n != PanicRetries+2 {
		t.Errorf("%d failure logs; want %d, one per task:\n%s", n, PanicRetries+2, out)
	}
	if !strings.Contains(out, "panic_test.go") {
		t.Errorf("the log holds no stack through the handler:\n%s", out)
	}
}

// reported is a reported failure, for comparison.
type reported struct {
	Message  string
	Terminal bool
}

// TestPanicLogIsBounded: the pieces of work remembered are bounded; the
// oldest are forgotten first.
func TestPanicLogIsBounded(t *testing.T) {
	var p panicLog
	for i := range maxPanicKeys + 10 {
		if !p.first(fmt.Sprint(i)) {
			t.Fatalf("key %d is not new", i)
		}
	}
	if len(p.seen) != maxPanicKeys || len(p.order) != maxPanicKeys {
		t.Fatalf("remembers %d keys (%d in order); want %d", len(p.seen), len(p.order), maxPanicKeys)
	}
	if p.first(fmt.Sprint(maxPanicKeys + 9)) {
		t.Error("a recent key is new again")
	}
	if !p.first("0") {
		t.Error("the oldest key is still remembered")
	}
}
