package api

import (
	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/store"
)

// The reasons of the conditions the server derives (Ready, Synced,
// DependenciesReady, Deleted, WorkerAvailable, ChildrenReady) and of the
// causes ExplainResource reports. They are named here once so that the
// sites that emit them, and docs/troubleshooting.md, cannot drift apart:
// TestTroubleshootingCoversReasons holds that page to Reasons. A reason a
// worker reports (its failure code, or a condition of its own) is the
// worker's and is not listed.
const (
	// The resource is Ready (the Ready condition is True).
	ReasonReady = client.PhaseReady
	// The resource has observed its generation (Synced is True).
	ReasonSynced = "Synced"
	// Work is queued and waits for a worker's free slot.
	ReasonPending = "Pending"
	// A worker is running the resource's task, or the phase is Reconciling.
	ReasonReconciling = client.PhaseReconciling
	// The resource waits for a dependency's value or readiness.
	ReasonWaiting = "Waiting"
	// The kind's max_inflight tasks are in flight; this one is queued.
	ReasonCapReached = "CapReached"
	// A generation is due but no task is queued for it.
	ReasonUnqueued = "Unqueued"
	// The last attempt failed transiently; it is retried with backoff.
	ReasonReconcileError = "ReconcileError"
	// An attempt failed terminally; nothing retries it by itself.
	ReasonTerminalError = "TerminalError"
	// Transient failures reached the kind's max_transient_attempts.
	ReasonAttemptsExhausted = store.ReasonAttemptsExhausted
	// The phase is Failed, with no failure reason of its own.
	ReasonFailed = client.PhaseFailed
	// The phase is Degraded: synced, but its worker reports it unwell.
	ReasonDegraded = client.PhaseDegraded
	// ExplainResource: a Degraded resource whose worker reports it unhealthy.
	ReasonUnhealthy = "Unhealthy"
	// The resource is quarantined: no work runs for it.
	ReasonQuarantined = client.PhaseQuarantined
	// Its composite no longer emits it; it is pruned after the grace.
	ReasonOrphaned = client.PhaseOrphaned
	// The resource is being deleted.
	ReasonDeleting = client.PhaseDeleting
	// A deleting resource waits for its children and dependents to go.
	ReasonWaitingForDependents = "WaitingForDependents"
	// A worker is running the resource's teardown.
	ReasonTearingDown = "TearingDown"
	// The last teardown attempt failed; it is retried with backoff.
	ReasonTeardownError = "TeardownError"
	// No connected worker serves the kind version and reaction.
	ReasonNoWorker = "NoWorker"
	// Workers serve it but none reports itself ready.
	ReasonNotReady = "NotReady"
	// ChildrenReady: every child is Ready.
	ReasonAllReady = "AllReady"
	// ChildrenReady: some child is not Ready yet, none failed or degraded.
	ReasonChildrenReconciling = "ChildrenReconciling"
	// ChildrenReady: a child failed.
	ReasonChildFailed = "ChildFailed"
	// ChildrenReady: a child is degraded, none failed.
	ReasonChildDegraded = "ChildDegraded"
	// ExplainResource: the walk reached a resource in a namespace the
	// caller may not read; it is named, its state is not shown.
	ReasonNotReadable = "NotReadable"
)

// Reasons lists every reason above, for documentation and its test.
var Reasons = []string{
	ReasonReady, ReasonSynced, ReasonPending, ReasonReconciling, ReasonWaiting, ReasonCapReached,
	ReasonUnqueued, ReasonReconcileError, ReasonTerminalError, ReasonAttemptsExhausted, ReasonFailed,
	ReasonDegraded, ReasonUnhealthy, ReasonQuarantined, ReasonOrphaned, ReasonDeleting,
	ReasonWaitingForDependents, ReasonTearingDown, ReasonTeardownError, ReasonNoWorker, ReasonNotReady,
	ReasonAllReady, ReasonChildrenReconciling, ReasonChildFailed, ReasonChildDegraded, ReasonNotReadable,
}
