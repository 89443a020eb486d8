package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

func TestReconcile(t *testing.T) {
	cases := []struct {
		name     string
		g        greeter
		spec     string
		message  string // wanted status message, when the task succeeds
		err      string // wanted error, when it fails
		terminal bool
	}{
		{name: "default greeting", spec: `{"name":"world"}`, message: "Hello, world!"},
		{name: "custom greeting", spec: `{"name":"Ada","greeting":"Good morning"}`, message: "Good morning, Ada!"},
		{name: "delay", g: greeter{delay: time.Millisecond}, spec: `{"name":"world"}`, message: "Hello, world!"},
		{name: "broken spec", spec: `{"name":1}`, err: "spec.name: want string, got number", terminal: true},
		{name: "fail terminal", g: greeter{failTerminal: "no such region"}, spec: `{"name":"world"}`, err: "no such region", terminal: true},
		{name: "fail transient", g: greeter{failTransient: "try later"}, spec: `{"name":"world"}`, err: "try later"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := converge.Typed(c.g.reconcile)(context.Background(), &converge.Task{Kind: "greeting", Spec: json.RawMessage(c.spec)})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || converge.IsTerminal(err) != c.terminal {
					t.Fatalf("error = %v (terminal %v); want %q (terminal %v)", err, converge.IsTerminal(err), c.err, c.terminal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := *res.Status.(*GreetingV1Status).Message; got != c.message {
				t.Fatalf("message = %q; want %q", got, c.message)
			}
		})
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := converge.Typed(greeter{delay: time.Hour}.reconcile)(ctx, &converge.Task{Spec: json.RawMessage(`{"name":"x"}`)})
	if err != context.Canceled {
		t.Fatalf("error = %v; want context.Canceled", err)
	}
}

func TestRunRejectsConflictingFailures(t *testing.T) {
	err := run([]string{"-fail-terminal", "a", "-fail-transient", "b"})
	if err == nil || !strings.Contains(err.Error(), "at most one") {
		t.Fatalf("run = %v; want a conflict error", err)
	}
}
