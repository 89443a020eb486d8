package converge

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// expectReadiness checks the next Readiness the worker sent on s.
func expectReadiness(t *testing.T, s *fakeSession, want ...string) {
	t.Helper()
	if got := s.readiness(t); !slices.Equal(got, want) {
		t.Fatalf("readiness = %q; want %q", got, want)
	}
}

const notReadyNoConfig = "greeting/1/reconcile=false(" + NoConfigReason + ")"

func TestNeedsConfigReportsReadinessPerStream(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", nop, NeedsConfig())
	w.Handle("greeting", 1, "teardown", nop)
	w.run(t)

	// Not ready at once: the report is the first message after Subscribe.
	s1 := f.accept(t)
	s1.subscribed(t, nil, nil)
	expectReadiness(t, s1, notReadyNoConfig)
	if first := s1.sent()[0]; first.GetReadiness() == nil {
		t.Errorf("first message after subscribing = %T; want the readiness report", first.GetMsg())
	}

	// A new stream's server knows nothing: the report is sent again.
	s1.close()
	s2 := f.accept(t)
	s2.subscribed(t, nil, nil)
	expectReadiness(t, s2, notReadyNoConfig)

	// An empty default is no config; an empty object is one.
	s2.configs(t, kindConfig("greeting", 1, ""))
	s2.configs(t, kindConfig("greeting", 1, `{}`))
	expectReadiness(t, s2, "greeting/1/reconcile=true()")

	// Ready is what a new stream's server assumes: nothing to report, until
	// the stream's complete set of configs lacks greeting v1's.
	s2.close()
	s3 := f.accept(t)
	s3.subscribed(t, nil, nil)
	s3.heartbeat(t)
	s3.configs(t)
	expectReadiness(t, s3, notReadyNoConfig)
	s3.configs(t, kindConfig("greeting", 1, `{"region":"eu"}`))
	expectReadiness(t, s3, "greeting/1/reconcile=true()")

	for i, s := range []*fakeSession{s1, s2, s3} {
		n := 0
		for _, m := range s.sent() {
			if m.GetReadiness() != nil {
				n++
			}
		}
		if want := []int{1, 2, 2}[i]; n != want {
			t.Errorf("stream %d: %d readiness reports; want %d", i+1, n, want)
		}
	}
}

func TestNeedsConfigNeverRunsTheHandlerWithoutConfig(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	var runs atomic.Int64
	w.Handle("greeting", 1, "reconcile", func(context.Context, *Task) (*Result, error) {
		runs.Add(1)
		return nil, nil
	}, NeedsConfig())
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	// The task raced the readiness report: it is retried later.
	s.task(t, greetingTask(1, `{}`))
	r := s.result(t)
	if e := r.GetError(); e == nil || e.GetTerminal() || !strings.Contains(e.GetMessage(), `reaction "reconcile" needs a provider config (NeedsConfig)`) {
		t.Fatalf("result of a task without config = %v; want a transient error naming NeedsConfig", r)
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times without a config", n)
	}

	// A task with a config runs, whatever the worker has heard so far.
	task := greetingTask(2, `{}`)
	task.Config = []byte(`{"region":"eu"}`)
	s.task(t, task)
	if r := s.result(t); r.GetSuccess() == nil || runs.Load() != 1 {
		t.Fatalf("result of a task with a config = %v after %d runs; want success after 1", r, runs.Load())
	}
}

func TestSetReady(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("greeting", 1, "reconcile", nop, NeedsConfig())
	w.Handle("greeting", 1, "teardown", nop)
	w.Handle("greeting", 2, "reconcile", nop)

	// Before Run: reported once a stream is subscribed.
	if err := w.SetReady("greeting", 1, "teardown", false, "database down"); err != nil {
		t.Fatal(err)
	}
	err := w.SetReady("greeting", 1, "nope", false, "")
	if err == nil || !strings.Contains(err.Error(), `SetReady("greeting", 1, "nope"): no handler is registered`) {
		t.Fatalf("SetReady of an unregistered reaction = %v; want an error naming it", err)
	}
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	expectReadiness(t, s, notReadyNoConfig, "greeting/1/teardown=false(database down)")

	// Both reasons, while both hold.
	mustSetReady(t, w, "greeting", 1, "reconcile", false, "quota exhausted")
	expectReadiness(t, s, "greeting/1/reconcile=false("+NoConfigReason+"; quota exhausted)")
	mustSetReady(t, w, "greeting", 1, "teardown", true, "")
	expectReadiness(t, s, "greeting/1/teardown=true()")
	// Saying again what the server knows sends nothing: the next report
	// is the next change.
	mustSetReady(t, w, "greeting", 1, "teardown", true, "")
	s.configs(t, kindConfig("greeting", 1, `{"a":1}`))
	expectReadiness(t, s, "greeting/1/reconcile=false(quota exhausted)")
	mustSetReady(t, w, "greeting", 1, "reconcile", true, "")
	expectReadiness(t, s, "greeting/1/reconcile=true()")

	// A long reason is cut to the protocol's bound, and made valid UTF-8;
	// the fake server checks the message is one the server accepts.
	mustSetReady(t, w, "greeting", 2, "reconcile", false, "bad \xff "+strings.Repeat("é", 2000))
	got := s.readiness(t)
	if len(got) != 1 || !strings.HasPrefix(got[0], "greeting/2/reconcile=false(bad \uFFFD éé") || !strings.HasSuffix(got[0], "é…)") {
		t.Fatalf("readiness with a long reason = %q", got)
	}
}

func mustSetReady(t *testing.T, w *testWorker, kind string, version int, reaction string, ready bool, reason string) {
	t.Helper()
	if err := w.SetReady(kind, version, reaction, ready, reason); err != nil {
		t.Fatal(err)
	}
}

func TestBoundReason(t *testing.T) {
	if got := boundReason(strings.Repeat("x", maxReasonChars)); len(got) != maxReasonChars {
		t.Errorf("a reason at the limit was changed to %d bytes", len(got))
	}
	got := boundReason(strings.Repeat("€", maxReasonChars+1))
	if n := len([]rune(got)); n != maxReasonChars || !strings.HasSuffix(got, "…") {
		t.Errorf("a reason over the limit has %d characters (%q...); want %d ending in …", n, got[:9], maxReasonChars)
	}
}

func TestReadinessChangesOnlyWhatTheStreamWasNotTold(t *testing.T) {
	r := newReadiness()
	k := reactionKey{"greeting", 1, "reconcile"}
	r.add(k, true)
	r.add(reactionKey{"greeting", 1, "teardown"}, false)
	var s streamReadiness
	if got := renderReadiness(r.changes(&s)); !slices.Equal(got, []string{notReadyNoConfig}) {
		t.Fatalf("first changes = %q", got)
	}
	if m := r.changes(&s); m != nil {
		t.Fatalf("changes with nothing new = %v; want nil", m)
	}
	// A change and its undoing between two sends cancel out.
	r.setConfig(kindVersion{"greeting", 1}, true)
	r.setConfig(kindVersion{"greeting", 1}, false)
	if m := r.changes(&s); m != nil {
		t.Fatalf("changes after a flap = %v; want nil", m)
	}
	r.setConfig(kindVersion{"greeting", 1}, true)
	want := &convergev1.ReactionReadiness{Reaction: &convergev1.ReactionRef{Kind: "greeting", KindVersion: 1, Reaction: "reconcile"}, Ready: true}
	if m := r.changes(&s); len(m.GetReactions()) != 1 || m.GetReactions()[0].String() != want.String() {
		t.Fatalf("changes after the config arrived = %v; want %v", m, want)
	}
	// A new stream starts from the server's default: all ready.
	var fresh streamReadiness
	if m := r.changes(&fresh); m != nil {
		t.Fatalf("changes on a new stream with everything ready = %v; want nil", m)
	}
}
