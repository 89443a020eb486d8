package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// failTimes fails the resource's task n times in a row, transiently, each
// retried almost at once (a 1 ms retry-after), and returns the last result.
func failTimes(t *testing.T, s *store.Store, n int, reason string) store.OutcomeResult {
	t.Helper()
	var res []store.OutcomeResult
	for i := range n {
		c := waitClaim(t, s)
		var err error
		res, err = s.ApplyOutcomes(t.Context(), []store.Outcome{{Lease: c.Lease, Failed: true, Message: fmt.Sprintf("boom %d", i+1),
			Reason: reason, RetryAfter: time.Millisecond}}, fast)
		if err != nil || !res[0].Applied {
			t.Fatalf("failure %d: %+v, %v", i+1, res, err)
		}
	}
	return res[0]
}

func TestDefaultTransientCapGivesUp(t *testing.T) {
	s, _ := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	n := limits.DefaultMaxTransientAttempts
	if res := failTimes(t, s, n-1, ""); res.RetryAt.IsZero() {
		t.Fatalf("failure %d of %d was not retried: %+v", n-1, n, res)
	}
	if r := get(t, s, "a"); r.Phase != "Reconciling" || r.FailureTerminal || int(r.FailureAttempts) != n-1 {
		t.Fatalf("after %d failures: phase %s, terminal %v, attempts %d", n-1, r.Phase, r.FailureTerminal, r.FailureAttempts)
	}
	if res := failTimes(t, s, 1, ""); !res.RetryAt.IsZero() {
		t.Fatalf("failure %d was retried; the default cap is %d: %+v", n, n, res)
	}
	r := get(t, s, "a")
	if r.Phase != "Failed" || !r.FailureTerminal || int(r.FailureAttempts) != n || r.Task != nil {
		t.Fatalf("after %d failures: phase %s, terminal %v, attempts %d, task %+v", n, r.Phase, r.FailureTerminal, r.FailureAttempts, r.Task)
	}
	want := fmt.Sprintf("boom 1 (gave up after %d consecutive transient failures: the server's default cap of %d was reached; "+
		"the kind's max_transient_attempts changes it)", n, n)
	if *r.FailureMessage != want {
		t.Fatalf("message = %q, want %q", *r.FailureMessage, want)
	}
	if r.FailureReason == nil || *r.FailureReason != "AttemptsExhausted" {
		t.Fatalf("reason = %v, want AttemptsExhausted", r.FailureReason)
	}
}

func TestNegativeTransientCapNeverGivesUp(t *testing.T) {
	s, _ := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{MaxTransientAttempts: -1})
	apply(t, s, rev, "a", `{}`)
	n := limits.DefaultMaxTransientAttempts + 3
	if res := failTimes(t, s, n, "Throttled"); res.RetryAt.IsZero() {
		t.Fatalf("failure %d was not retried with max_transient_attempts -1: %+v", n, res)
	}
	r := get(t, s, "a")
	if r.FailureTerminal || int(r.FailureAttempts) != n || r.Task == nil {
		t.Fatalf("after %d failures: terminal %v, attempts %d, task %+v", n, r.FailureTerminal, r.FailureAttempts, r.Task)
	}
	if r.FailureReason == nil || *r.FailureReason != "Throttled" {
		t.Fatalf("reason = %v, want Throttled", r.FailureReason)
	}
}

// A worker's reason is kept with the failure, also when the cap turns it
// terminal (the message says the cap was reached), and goes with success.
func TestFailureReasonIsStoredAndCleared(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{MaxTransientAttempts: 2})
	apply(t, s, rev, "a", `{}`)
	failTimes(t, s, 1, "QuotaExceeded")
	if r := get(t, s, "a"); r.FailureReason == nil || *r.FailureReason != "QuotaExceeded" || r.FailureTerminal {
		t.Fatalf("after a transient failure: reason %v, terminal %v", r.FailureReason, r.FailureTerminal)
	}
	failTimes(t, s, 1, "QuotaExceeded")
	r := get(t, s, "a")
	if r.FailureReason == nil || *r.FailureReason != "QuotaExceeded" || !r.FailureTerminal ||
		!strings.Contains(*r.FailureMessage, "max_transient_attempts of 2 was reached") {
		t.Fatalf("after reaching the cap: reason %v, terminal %v, message %q", r.FailureReason, r.FailureTerminal, *r.FailureMessage)
	}
	apply(t, s, rev, "a", `{"v":2}`)
	c := waitClaim(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Terminal: true, Message: "no", Reason: "InvalidRegion"}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "a"); r.FailureReason == nil || *r.FailureReason != "InvalidRegion" || r.Phase != "Failed" {
		t.Fatalf("after a terminal failure: reason %v, phase %s", r.FailureReason, r.Phase)
	}
	apply(t, s, rev, "a", `{"v":3}`)
	c = waitClaim(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Terminal: true, Message: "no reason"}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "a"); r.FailureReason != nil {
		t.Fatalf("a terminal failure without a reason kept reason %q", *r.FailureReason)
	}
	apply(t, s, rev, "a", `{"v":4}`)
	failTimes(t, s, 1, "Throttled")
	c = waitClaim(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Status: []byte(`{}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	if r := get(t, s, "a"); r.FailureReason != nil || r.FailureMessage != nil || r.Phase != "Ready" {
		t.Fatalf("after success: reason %v, message %v, phase %s", r.FailureReason, r.FailureMessage, r.Phase)
	}
}

// A worker's retry-after replaces the backoff: the task is due then, not
// sooner, and the resource shows it.
func TestRetryAfterReplacesBackoff(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	c := waitClaim(t, s)
	before := time.Now()
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Failed: true, Message: "slow down", RetryAfter: time.Hour}},
		store.Backoff{Base: time.Millisecond, Max: time.Millisecond})
	if err != nil || !res[0].Applied {
		t.Fatalf("%+v, %v", res, err)
	}
	// The database's clock may differ a little from ours.
	if d := res[0].RetryAt.Sub(before); d < time.Hour-5*time.Second || d > time.Hour+5*time.Second {
		t.Fatalf("retry at %s from now, want about 1h", d)
	}
	r := get(t, s, "a")
	if r.Task == nil || !r.Task.NotBefore.Equal(res[0].RetryAt) {
		t.Fatalf("task %+v, want not_before %s", r.Task, res[0].RetryAt)
	}
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("claimed %d tasks before the retry-after passed", len(got))
	}
}
