package store

// What holds a resource back from reconcile work, and what its pending
// reconcile waits for, as converge_hold and converge_waits_for
// (migrations/functions.sql) decide them: the decisions live there alone;
// these are the names they answer with.
const (
	// The holds, in converge_hold's precedence order.
	HoldDeleting    = "deleting"
	HoldQuarantined = "quarantined"
	HoldFailed      = "failed"
	HoldOrphaned    = "orphaned"
	HoldWaiting     = "waiting"

	// What a pending reconcile that nothing holds waits for.
	WaitRunning  = "running"  // a worker has the task
	WaitBackoff  = "backoff"  // a failed attempt is retried after a backoff
	WaitCapped   = "capped"   // the kind version's max_inflight is reached
	WaitWorker   = "worker"   // the task is ready for any worker that serves it
	WaitUnqueued = "unqueued" // a generation is due but no task is queued
)
