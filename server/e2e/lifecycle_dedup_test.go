//go:build unix

package e2e

import "testing"

// TestForcedReconcileIsNewWork forces a reconcile of a Ready resource: the
// worker must be told it is new work, with a dedup token of its own. The
// SDK tells handlers to key side effects by Task.DedupToken ("stable
// across redeliveries of the same work ... and differs between pieces of
// work"), so a handler that does would skip a forced reconcile whose
// token is the one its last run already used, and `conctl reconcile`
// would re-observe nothing. A resync, the other re-run at an unchanged
// generation, gets a token of its own for this reason.
func TestForcedReconcileIsNewWork(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(dbKind, "kind db/v1 created")
	l.mustApply(dbDoc("x", "prod", "{size: 1}"))
	l.waitSynced("db", "x", 1)
	l.mustCtl("reconcile", "db/x", "--reason", "re-observe", "--wait")

	ran := l.tasks("db", "x", "specChange")
	if len(ran) != 2 || ran[0].Generation != 1 || ran[1].Generation != 1 {
		t.Fatalf("after a forced reconcile of db/x at generation 1, the worker ran:\n%s\nwant two specChange tasks at generation 1", renderLC(ran))
	}
	if ran[0].DedupToken == ran[1].DedupToken {
		t.Errorf("the forced reconcile of db/x carried the dedup token of the run before it, %q: a handler that keys its "+
			"side effects by the token, as the SDK advises, takes it for a redelivery and skips it", ran[1].DedupToken)
	}
}
