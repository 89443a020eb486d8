package converge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func nop(context.Context, *Task) (*Result, error) { return nil, nil }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestSubscribeListsReactionsAndLogsWarnings(t *testing.T) {
	f := newFakeServer(t)
	logs := &syncBuffer{}
	w := newTestWorker(f, WithCapacity(7), WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	w.Handle("b", 2, "reconcile", nop)
	w.Handle("a", 1, "teardown", nop)
	w.Handle("a", 1, "reconcile", nop)
	w.run(t)

	s := f.accept(t)
	sub := s.sub
	if sub.GetWorkerName() != "test-worker" || sub.GetCapacity() != 7 || len(sub.GetResumed()) != 0 {
		t.Fatalf("subscribe = %v; want name test-worker, capacity 7, nothing resumed", sub)
	}
	if !strings.HasPrefix(sub.GetSdk(), "converge-go") {
		t.Errorf("sdk = %q; want converge-go...", sub.GetSdk())
	}
	var got []string
	for _, r := range sub.GetReactions() {
		got = append(got, fmt.Sprintf("%s/%d/%s", r.GetKind(), r.GetKindVersion(), r.GetReaction()))
	}
	if want := "a/1/reconcile a/1/teardown b/2/reconcile"; strings.Join(got, " ") != want {
		t.Errorf("reactions = %v; want %s", got, want)
	}

	s.subscribed(t, nil, nil, "kind b v2 is not applied")
	if hb := s.heartbeat(t); len(hb.GetInFlight()) != 0 {
		t.Errorf("idle heartbeat lists %v", hb.GetInFlight())
	}
	eventually(t, "the server warning is logged", func() bool {
		return strings.Contains(logs.String(), "kind b v2 is not applied")
	})
}

func TestResults(t *testing.T) {
	type check func(t *testing.T, r *convergev1.TaskResult)
	success := func(status string, unhealthy bool, conds ...*convergev1.Condition) check {
		return func(t *testing.T, r *convergev1.TaskResult) {
			t.Helper()
			s := r.GetSuccess()
			if s == nil {
				t.Fatalf("result = %v; want success", r)
			}
			if string(s.GetStatus()) != status || s.GetUnhealthy() != unhealthy {
				t.Errorf("success = %v; want status %q, unhealthy %v", s, status, unhealthy)
			}
			if len(s.GetConditions()) != len(conds) {
				t.Fatalf("conditions = %v; want %v", s.GetConditions(), conds)
			}
			for i, c := range conds {
				g := s.GetConditions()[i]
				if g.GetType() != c.GetType() || g.GetStatus() != c.GetStatus() || g.GetReason() != c.GetReason() || g.GetMessage() != c.GetMessage() {
					t.Errorf("condition %d = %v; want %v", i, g, c)
				}
			}
		}
	}
	failure := func(contains string, terminal bool) check {
		return func(t *testing.T, r *convergev1.TaskResult) {
			t.Helper()
			e := r.GetError()
			if e == nil {
				t.Fatalf("result = %v; want error", r)
			}
			if !strings.Contains(e.GetMessage(), contains) || e.GetTerminal() != terminal {
				t.Errorf("error = %q terminal=%v; want it to contain %q, terminal=%v", e.GetMessage(), e.GetTerminal(), contains, terminal)
			}
		}
	}

	cases := []struct {
		name    string
		handler HandlerFunc
		want    check
	}{
		{"status", func(context.Context, *Task) (*Result, error) {
			return &Result{
				Status:     map[string]any{"message": "hi"},
				Unhealthy:  true,
				Conditions: []Condition{{Type: "Ready", Status: ConditionFalse, Reason: "Waiting", Message: "not yet"}},
			}, nil
		}, success(`{"message":"hi"}`, true, &convergev1.Condition{Type: "Ready", Status: "False", Reason: "Waiting", Message: "not yet"})},
		{"raw-status", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: json.RawMessage(`{ "a" : 1 }`)}, nil
		}, success(`{"a":1}`, false)},
		{"struct-status", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: struct {
				Message string `json:"message"`
			}{"x"}}, nil
		}, success(`{"message":"x"}`, false)},
		{"nil-result", nop, success("", false)},
		{"null-status", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]any(nil)}, nil
		}, success("", false)},
		{"array-status", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: []int{1}}, nil
		}, failure("status: must be a JSON object, got an array", true)},
		{"unencodable-status", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]any{"f": func() {}}}, nil
		}, failure("status: json: unsupported type", true)},
		{"huge-status", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]string{"blob": strings.Repeat("x", maxStatusBytes)}}, nil
		}, failure("status: 524299 bytes encoded, more than the limit of 524288", true)},
		{"invalid-condition", func(context.Context, *Task) (*Result, error) {
			return &Result{Conditions: []Condition{{Type: "Ready", Status: "yes"}}}, nil
		}, failure("conditions[0].status", true)},
		{"transient", func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]any{"ignored": true}}, errors.New("boom")
		}, failure("boom", false)},
		{"terminal", func(context.Context, *Task) (*Result, error) {
			return nil, Terminal(fmt.Errorf("bad spec: %w", io.ErrUnexpectedEOF))
		}, failure("bad spec: unexpected EOF", true)},
		{"invalid-utf8", func(context.Context, *Task) (*Result, error) {
			return nil, errors.New("bad \xff byte")
		}, failure("bad \uFFFD byte", false)},
		{"panic", func(context.Context, *Task) (*Result, error) {
			panic("kaboom")
		}, failure("panic: kaboom", false)},
		{"goexit", func(context.Context, *Task) (*Result, error) {
			runtime.Goexit()
			return nil, nil
		}, failure("exited without returning", false)},
		{"task-fields", func(ctx context.Context, task *Task) (*Result, error) {
			var spec struct{ Name string }
			if err := task.DecodeSpec(&spec); err != nil {
				return nil, err
			}
			var status struct{ Message string }
			if err := task.DecodeStatus(&status); err != nil {
				return nil, err
			}
			d, ok := ctx.Deadline()
			if !ok || !d.Equal(task.Deadline) {
				return nil, fmt.Errorf("context deadline %v, %v; want %v", d, ok, task.Deadline)
			}
			return &Result{Status: map[string]any{"seen": fmt.Sprintf("%s %d %s %s %s/%s %s %d %v %d %s %s %s",
				task.Kind, task.KindVersion, task.Reaction, task.Trigger, task.Namespace, task.Name, task.UID,
				task.Generation, task.Labels, task.Attempt, task.DedupToken, spec.Name, status.Message)}}, nil
		}, success(`{"seen":"greeting 1 task-fields specChange default/hello uid-1 3 map[team:a] 2 dedup world old"}`, false)},
		{"unregistered", nil, failure(`has no handler for kind "greeting" version 1 reaction "unregistered"`, true)},
	}

	f := newFakeServer(t)
	w := newTestWorker(f)
	for _, c := range cases {
		if c.handler != nil {
			w.Handle("greeting", 1, c.name, c.handler)
		}
	}
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := greetingTask(int64(i+1), `{"name":"world"}`)
			task.Reaction = c.name
			s.task(t, task)
			r := s.result(t)
			if r.GetLease().GetTaskId() != int64(i+1) || r.GetLease().GetEpoch() != 1 {
				t.Fatalf("result lease = %v; want task %d epoch 1", r.GetLease(), i+1)
			}
			c.want(t, r)
			s.ack(t, r.GetLease())
		})
	}
}

func TestDeadlineCancelsHandler(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", func(ctx context.Context, _ *Task) (*Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	task := greetingTask(1, `{}`)
	task.Deadline = timestamppbNow(50 * time.Millisecond)
	s.task(t, task)
	r := s.result(t)
	if e := r.GetError(); e == nil || e.GetTerminal() || !strings.Contains(e.GetMessage(), "deadline exceeded") {
		t.Fatalf("result = %v; want a transient deadline-exceeded error", r)
	}
}

func TestNewWorkerRejectsBadOptionsAndURLs(t *testing.T) {
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	cases := []struct {
		name string
		url  string
		env  map[string]string
		opts []Option
		want string
	}{
		{"bad scheme", "ftp://localhost:1", nil, nil, `server URL "ftp://localhost:1" (given to NewWorker): scheme must be http or https`},
		{"no host", "http://", nil, nil, `server URL "http://" (given to NewWorker): host is missing`},
		{"unparsable", "http://[::1", nil, nil, `server URL "http://[::1" (given to NewWorker): missing ']' in host`},
		{"bad env", "", map[string]string{EnvServer: "localhost:7070"}, nil, `server URL "localhost:7070" (from $CONVERGE_SERVER): scheme must be http or https`},
		{"capacity", "http://localhost:1", nil, []Option{WithCapacity(0)}, "WithCapacity(0)"},
		{"drain timeout", "http://localhost:1", nil, []Option{WithDrainTimeout(-time.Second)}, "WithDrainTimeout(-1s)"},
		{"backoff", "http://localhost:1", nil, []Option{WithReconnectBackoff(time.Second, time.Millisecond)}, "WithReconnectBackoff"},
		{"http client", "http://localhost:1", nil, []Option{WithHTTPClient(nil)}, "WithHTTPClient(nil)"},
		{"on config", "http://localhost:1", nil, []Option{WithOnConfig(nil)}, "WithOnConfig(nil)"},
		{"name", "http://localhost:1", nil, []Option{WithName(strings.Repeat("n", 254))}, "converge: WithName: worker_name must be at most 253 characters"},
		{"tls env", "https://localhost:1", map[string]string{EnvTLSCert: "/nonexistent/tls.crt"}, nil, `TLS files from CONVERGE_TLS_CA="" CONVERGE_TLS_CERT="/nonexistent/tls.crt" CONVERGE_TLS_KEY="": give both certFile and keyFile`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := newWorker(c.url, func(k string) string { return c.env[k] }, append(c.opts, quiet))
			if w != nil || err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("NewWorker = %v, %v; want an error containing %q", w, err, c.want)
			}
		})
	}
}

// TestNewWorkerServerURL: the argument wins, then CONVERGE_SERVER, then the
// default, which is conctl's and the client's.
func TestNewWorkerServerURL(t *testing.T) {
	for _, c := range []struct {
		arg, env, want string
	}{
		{"https://a.example:7070", "http://b.example:7070", "https://a.example:7070"},
		{"", "http://b.example:7070", "http://b.example:7070"},
		{"", "", "http://localhost:7070"},
	} {
		w, err := newWorker(c.arg, func(k string) string {
			if k == EnvServer {
				return c.env
			}
			return ""
		}, []Option{nil})
		if err != nil || w.url != c.want {
			t.Errorf("NewWorker(%q) with %s=%q: url %v, err %v; want %q", c.arg, EnvServer, c.env, w, err, c.want)
		}
	}
	if EnvServer != "CONVERGE_SERVER" || DefaultServerURL != "http://localhost:7070" {
		t.Errorf("EnvServer %q, DefaultServerURL %q: conctl and stdworker use CONVERGE_SERVER and http://localhost:7070", EnvServer, DefaultServerURL)
	}
}

func TestRunRejectsBadConfiguration(t *testing.T) {
	cases := []struct {
		name  string
		setup func(*Worker)
		want  string
	}{
		{"no handler", func(*Worker) {}, "no handler registered"},
		{"kind", func(w *Worker) { w.Handle("", 1, "reconcile", nop) }, `Handle("", 1, "reconcile"): `},
		{"version", func(w *Worker) { w.Handle("k", 0, "reconcile", nop) }, "kind_version"},
		{"huge version", func(w *Worker) { w.Handle("k", 1<<40, "reconcile", nop) }, "kind_version"},
		{"reaction", func(w *Worker) { w.Handle("k", 1, strings.Repeat("r", 64), nop) }, "reaction"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := mustWorker(t, "http://localhost:1", WithLogger(slog.New(slog.DiscardHandler)))
			c.setup(w)
			err := w.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Run = %v; want an error containing %q", err, c.want)
			}
		})
	}
}

func TestRunTwice(t *testing.T) {
	w := mustWorker(t, "http://localhost:1", WithLogger(slog.New(slog.DiscardHandler)))
	w.Handle("k", 1, "reconcile", nop)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatalf("Run with a done context = %v; want nil", err)
	}
	if err := w.Run(ctx); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("second Run = %v; want an error", err)
	}
}

func TestHandlePanicsOnMisuse(t *testing.T) {
	w := mustWorker(t, "http://localhost:1")
	w.Handle("k", 1, "reconcile", nop)
	mustPanic(t, "duplicate", func() { w.Handle("k", 1, "reconcile", nop) })
	mustPanic(t, "nil handler", func() { w.Handle("k", 1, "other", nil) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mustPanic(t, "after Run", func() { w.Handle("k", 2, "reconcile", nop) })
}

func mustWorker(t *testing.T, url string, opts ...Option) *Worker {
	t.Helper()
	w, err := NewWorker(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		v := recover()
		if v == nil {
			t.Errorf("%s: no panic", what)
			return
		}
		if !strings.HasPrefix(fmt.Sprint(v), "converge: Handle(") {
			t.Errorf("%s: panic %v does not name the call", what, v)
		}
	}()
	f()
}
