package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
)

// manifest is kind greeting v1, from greeting.yaml (the resource in the
// file is skipped).
func manifest(t *testing.T) *convergetest.Manifest {
	t.Helper()
	return convergetest.ReadManifest(t, "greeting.yaml", convergetest.YAML(yaml.Unmarshal))
}

func TestReconcile(t *testing.T) {
	m := manifest(t)
	cases := []struct {
		name     string
		g        greeter
		spec     string
		status   string // wanted status, when the task succeeds
		err      string // wanted error, when it fails
		terminal bool
	}{
		{name: "default greeting", spec: `{"name":"world"}`, status: `{"message":"Hello, world!"}`},
		{name: "custom greeting", spec: `{"name":"Ada","greeting":"Good morning"}`, status: `{"message":"Good morning, Ada!"}`},
		{name: "delay", g: greeter{delay: time.Millisecond}, spec: `{"name":"world"}`, status: `{"message":"Hello, world!"}`},
		{name: "broken spec", spec: `{"name":1}`, err: "spec.name: want string, got number", terminal: true},
		{name: "fail terminal", g: greeter{failTerminal: "no such region"}, spec: `{"name":"world"}`, err: "no such region", terminal: true},
		{name: "fail transient", g: greeter{failTransient: "try later"}, spec: `{"name":"world"}`, err: "try later"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := convergetest.Run(t, converge.Typed(c.g.reconcile), convergetest.NewTask(t, m, "reconcile", c.spec))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || converge.IsTerminal(err) != c.terminal {
					t.Fatalf("error = %v (terminal %v); want %q (terminal %v)", err, converge.IsTerminal(err), c.err, c.terminal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Status) != c.status {
				t.Fatalf("status = %s; want %s", out.Status, c.status)
			}
		})
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	task := convergetest.NewTask(t, manifest(t), "reconcile", `{"name":"x"}`)
	_, err := converge.Typed(greeter{delay: time.Hour}.reconcile)(ctx, task)
	if err != context.Canceled {
		t.Fatalf("error = %v; want context.Canceled", err)
	}
}

// The worker as main wires it, against a test server: it subscribes to
// greeting v1's reconcile and reports every greeting's message.
func TestWorkerServesGreetings(t *testing.T) {
	m := manifest(t)
	srv := convergetest.NewServer(t)
	w := convergetest.NewWorker(t, srv)
	greeter{}.register(w)
	convergetest.RunWorker(t, w)

	reactions := srv.Subscription(t.Context()).GetReactions()
	if len(reactions) != 1 || reactions[0].GetKind() != "greeting" || reactions[0].GetKindVersion() != 1 || reactions[0].GetReaction() != "reconcile" {
		t.Fatalf("subscribed to %v; want greeting v1 reconcile", reactions)
	}
	ada := convergetest.NewTask(t, m, "reconcile", `{"name":"Ada","greeting":"Hi"}`, convergetest.WithName("ada"))
	world := convergetest.NewTask(t, m, "reconcile", `{"name":"world"}`, convergetest.WithName("world"))
	srv.Send(ada, world)
	for task, want := range map[*converge.Task]string{ada: `{"message":"Hi, Ada!"}`, world: `{"message":"Hello, world!"}`} {
		r := srv.ResultFor(t.Context(), task)
		if r.Err != nil || string(r.Outcome.Status) != want {
			t.Errorf("%s: %v, %v; want %s", task.Name, r.Outcome, r.Err, want)
		}
	}
}

func TestRunRejectsConflictingFailures(t *testing.T) {
	err := run([]string{"-fail-terminal", "a", "-fail-transient", "b"})
	if err == nil || !strings.Contains(err.Error(), "at most one") {
		t.Fatalf("run = %v; want a conflict error", err)
	}
}
