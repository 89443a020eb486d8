package converge

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestFailedTaskIsLoggedOnce: a failed task is logged once by the worker,
// naming the resource, generation, attempt and trace id; a success is not
// logged.
func TestFailedTaskIsLoggedOnce(t *testing.T) {
	f := newFakeServer(t)
	logs := &syncBuffer{}
	w := newTestWorker(f, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.Handle("greeting", 1, "reconcile", func(_ context.Context, task *Task) (*Result, error) {
		if strings.Contains(string(task.Spec), "bad") {
			return nil, Terminal(errors.New("no such region"))
		}
		return nil, nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	bad := greetingTask(1, `{"name":"bad"}`)
	bad.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s.task(t, bad)
	if r := s.result(t); r.GetError() == nil {
		t.Fatalf("result = %v", r)
	}
	s.task(t, greetingTask(2, `{"name":"good"}`))
	if r := s.result(t); r.GetError() != nil {
		t.Fatalf("result = %v", r)
	}
	got := logs.String()
	if n := strings.Count(got, "converge: task failed"); n != 1 {
		t.Fatalf("%d failure lines, want 1:\n%s", n, got)
	}
	for _, want := range []string{"level=ERROR", "kind=greeting", "generation=", "attempt=", "terminal=true", `err="no such region"`,
		"trace_id=4bf92f3577b34da6a3ce929d0e0e4736"} {
		if !strings.Contains(got, want) {
			t.Errorf("the failure line lacks %s:\n%s", want, got)
		}
	}
}
