package api

import (
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

func conditionOf(cs []*convergev1.Condition, typ string) *convergev1.Condition {
	for _, c := range cs {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// A failure's reason code takes the place of the scheduler's default in
// the conditions that explain the failure, and is named in their
// messages; without one, the defaults stay.
func TestConditionsCarryTheFailureReason(t *testing.T) {
	str := func(s string) *string { return &s }
	task := &store.PendingTask{Trigger: "specChange", NotBefore: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for _, c := range []struct {
		name           string
		r              store.Resource
		ready, synced  string
		deleted        string
		messageContain string
	}{
		{"terminal with a reason", store.Resource{Phase: "Failed", Generation: 2, SyncedGeneration: 1, Wait: store.HoldFailed,
			FailureMessage: str("no such region"), FailureReason: str("InvalidRegion"), FailureAttempts: 1, FailureTerminal: true},
			"InvalidRegion", "InvalidRegion", "", "attempt 1 failed terminally (InvalidRegion): no such region"},
		{"terminal without one", store.Resource{Phase: "Failed", Generation: 2, SyncedGeneration: 1, Wait: store.HoldFailed,
			FailureMessage: str("no such region"), FailureAttempts: 1, FailureTerminal: true},
			"Failed", "TerminalError", "", "attempt 1 failed terminally: no such region"},
		{"backoff with a reason", store.Resource{Phase: "Reconciling", Generation: 2, SyncedGeneration: 1, Wait: store.WaitBackoff,
			FailureMessage: str("quota used up"), FailureReason: str("QuotaExceeded"), FailureAttempts: 3, Task: task},
			"QuotaExceeded", "QuotaExceeded", "", "attempt 3 failed (QuotaExceeded): quota used up; retrying at 2026-01-02T03:04:05Z"},
		{"running again", store.Resource{Phase: "Reconciling", Generation: 2, SyncedGeneration: 1, Wait: store.WaitRunning,
			FailureMessage: str("quota used up"), FailureReason: str("QuotaExceeded"), FailureAttempts: 3},
			"QuotaExceeded", "Reconciling", "", "running again after attempt 3 failed (QuotaExceeded): quota used up"},
		{"teardown", store.Resource{Phase: "Deleting", Generation: 1, SyncedGeneration: 1, Wait: store.WaitBackoff,
			DeletionRequestedAt: &task.NotBefore, FailureMessage: str("bucket not empty"), FailureReason: str("NotEmpty"),
			FailureAttempts: 2, Task: task},
			"Deleting", "Synced", "NotEmpty", "teardown attempt 2 failed (NotEmpty): bucket not empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := conditions(c.r, nil)
			if got := conditionOf(cs, "Ready").GetReason(); got != c.ready {
				t.Errorf("Ready reason = %q, want %q", got, c.ready)
			}
			if got := conditionOf(cs, "Synced").GetReason(); got != c.synced {
				t.Errorf("Synced reason = %q, want %q", got, c.synced)
			}
			if got := conditionOf(cs, "Deleted").GetReason(); got != c.deleted {
				t.Errorf("Deleted reason = %q, want %q", got, c.deleted)
			}
			found := false
			for _, cond := range cs {
				found = found || strings.Contains(cond.GetMessage(), c.messageContain)
			}
			if !found {
				t.Errorf("no condition says %q: %v", c.messageContain, cs)
			}
		})
	}
}
