package api

import (
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

// conditions derives the built-in conditions from the row (never stored,
// so they cannot disagree with the phase) and appends the ones workers
// reported. Why an unsynced resource waits is the scheduler's own reading
// (store.Resource.Wait, from converge_waits_for), never a second guess.
func conditions(r store.Resource, isParked parked) []*convergev1.Condition {
	var out []*convergev1.Condition
	add := func(typ, status, reason, msg string) {
		out = append(out, &convergev1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: r.SyncedGeneration})
	}
	switch r.Phase {
	case "Ready":
		add("Ready", "True", ReasonReady, "")
	case "Failed", "Reconciling":
		add("Ready", "False", failureReason(r, r.Phase), deref(r.FailureMessage))
	default:
		// Deleting, Quarantined, Orphaned or Degraded: the phase is the
		// reason (each is one of Reasons).
		add("Ready", "False", r.Phase, deref(r.FailureMessage))
	}
	if r.SyncedGeneration >= r.Generation {
		add("Synced", "True", ReasonSynced, fmt.Sprintf("generation %d observed", r.SyncedGeneration))
	} else {
		reason, msg := syncWait(r)
		if reason == ReasonTerminalError || reason == ReasonReconcileError {
			reason = failureReason(r, reason)
		}
		add("Synced", "False", reason, msg)
	}
	if r.Waiting != nil {
		add("DependenciesReady", "False", ReasonWaiting, *r.Waiting)
	}
	if r.DeletionRequestedAt != nil {
		reason, msg := teardownWait(r)
		if reason == ReasonTeardownError {
			reason = failureReason(r, reason)
		}
		add("Deleted", "False", reason, msg)
	}
	if reason, msg, ok := workerAvailable(r, isParked); ok {
		add("WorkerAvailable", "False", reason, msg)
	}
	return append(out, reported(r)...)
}

// failureReason is the reason a condition explaining r's failure gives:
// the failure's own (the worker's code, or AttemptsExhausted) when it has
// one, else fallback.
func failureReason(r store.Resource, fallback string) string {
	if reason := deref(r.FailureReason); reason != "" && r.FailureMessage != nil {
		return reason
	}
	return fallback
}

// failedWith words r's failure for a message: "attempt N failed
// terminally (Reason): message", what the prefix says first.
func failedWith(r store.Resource, prefix string) string {
	cause := ""
	if reason := deref(r.FailureReason); reason != "" {
		cause = " (" + reason + ")"
	}
	return fmt.Sprintf("%s%s: %s", prefix, cause, deref(r.FailureMessage))
}

// syncWait says why a generation the resource has not observed waits. Its
// reasons are the scheduler's; conditions puts the failure's own reason in
// place of TerminalError and ReconcileError.
func syncWait(r store.Resource) (reason, msg string) {
	gen := r.Generation
	switch r.Wait {
	case store.HoldDeleting:
		return ReasonDeleting, fmt.Sprintf("generation %d will not run: the resource is being deleted", gen)
	case store.HoldQuarantined:
		return ReasonQuarantined, fmt.Sprintf("generation %d runs once the resource is unquarantined", gen)
	case store.HoldFailed:
		return ReasonTerminalError, failedWith(r, fmt.Sprintf("attempt %d failed terminally", r.FailureAttempts))
	case store.HoldOrphaned:
		return ReasonOrphaned, fmt.Sprintf("generation %d will not run: its composite no longer emits it", gen)
	case store.HoldWaiting:
		return ReasonWaiting, fmt.Sprintf("generation %d waits for its dependencies", gen)
	case store.WaitBackoff:
		msg := failedWith(r, fmt.Sprintf("attempt %d failed", r.FailureAttempts))
		if r.Task != nil {
			msg += fmt.Sprintf("; retrying at %s", r.Task.NotBefore.UTC().Format(time.RFC3339Nano))
		}
		return ReasonReconcileError, msg
	case store.WaitRunning:
		if r.FailureMessage != nil {
			return ReasonReconciling, failedWith(r, fmt.Sprintf("generation %d is running again after attempt %d failed", gen, r.FailureAttempts))
		}
		return ReasonReconciling, fmt.Sprintf("generation %d is running on a worker", gen)
	case store.WaitCapped:
		return ReasonCapReached, fmt.Sprintf("generation %d is queued: kind %s v%d has max_inflight tasks in flight", gen, r.Kind, r.KindVersion)
	case store.WaitUnqueued:
		return ReasonUnqueued, fmt.Sprintf("generation %d is due but no task is queued for it; conctl reconcile queues one", gen)
	}
	return ReasonPending, fmt.Sprintf("generation %d is waiting for a worker", gen)
}

// abandonHintAfter is how many failed teardown attempts it takes before
// a deleting resource's condition names the way out (abandon).
const abandonHintAfter = 3

// teardownWait says what a deleting resource's teardown waits for.
func teardownWait(r store.Resource) (reason, msg string) {
	if r.Quarantined {
		return ReasonQuarantined, "its teardown stops while it is quarantined; its owner's and dependencies' go on without it"
	}
	switch r.Wait {
	case store.HoldDeleting:
		return ReasonWaitingForDependents, "its children and dependents are torn down first"
	case store.WaitRunning:
		return ReasonTearingDown, "its teardown is running on a worker"
	case store.WaitBackoff:
		msg := failedWith(r, fmt.Sprintf("teardown attempt %d failed", r.FailureAttempts))
		if r.Task != nil {
			msg += fmt.Sprintf("; retrying at %s", r.Task.NotBefore.UTC().Format(time.RFC3339Nano))
		}
		if r.FailureAttempts >= abandonHintAfter {
			msg += fmt.Sprintf("; if it can never succeed, an admin can remove the resource without teardown: "+
				"conctl delete resource %s/%s -n %s --abandon --reason REASON (what it created may remain)", r.Kind, r.Name, r.Namespace)
		}
		return ReasonTeardownError, msg
	case store.WaitCapped:
		return ReasonCapReached, fmt.Sprintf("its teardown is queued: kind %s v%d has max_inflight tasks in flight", r.Kind, r.KindVersion)
	}
	return ReasonPending, "its teardown is waiting for a worker"
}

// workerAvailable reports, for work ready for a worker, that no connected
// worker serves it or none is ready for it.
func workerAvailable(r store.Resource, isParked parked) (reason, msg string, ok bool) {
	if r.Task == nil || r.Task.Claimed || isParked == nil {
		return "", "", false
	}
	switch r.Wait {
	case store.WaitWorker, store.WaitBackoff, store.WaitCapped, "":
	default:
		return "", "", false
	}
	reaction, p, why := isParked(r.Kind, r.KindVersion, r.Task.Trigger)
	switch {
	case p && why != "":
		return ReasonNotReady, fmt.Sprintf("workers not ready: %s (kind %s v%d reaction %q); the resource stays queued until one is",
			why, r.Kind, r.KindVersion, reaction), true
	case p:
		return ReasonNoWorker, fmt.Sprintf("no connected worker serves kind %s v%d reaction %q; the resource stays queued until one connects",
			r.Kind, r.KindVersion, reaction), true
	}
	return "", "", false
}

// reported returns the conditions workers reported, as stored.
func reported(r store.Resource) []*convergev1.Condition {
	var stored []storedCondition
	if len(r.Conditions) <= 2 || json.Unmarshal(r.Conditions, &stored) != nil {
		return nil
	}
	out := make([]*convergev1.Condition, 0, len(stored))
	for _, c := range stored {
		pc := &convergev1.Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message,
			ObservedGeneration: r.SyncedGeneration}
		if t, err := time.Parse(time.RFC3339Nano, c.LastTransitionTime); err == nil {
			pc.LastTransitionTime = timestamppb.New(t)
		}
		out = append(out, pc)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
