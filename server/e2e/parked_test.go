//go:build unix

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestParkedKind has resources of two kinds, only one of which has a
// worker: the other kind's resources wait, queued and saying why, without
// holding up the first; once a worker for them connects, they flow too.
func TestParkedKind(t *testing.T) {
	begin(t)
	const parkedKind = "unserved.widget"
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyKind(t, srv.api, leafKind(t, "flowing"))
	applyKind(t, srv.api, leafKind(t, parkedKind))
	parked := applyResources(t, srv.api, parkedKind, "p", 3)
	applyResources(t, srv.api, "flowing", "f", 20)
	startNoop(t, srv, "noop flowing", "-kinds", "flowing:1:reconcile", "-capacity", "8")

	waitAllReady(t, srv.api, "flowing", 20, 30*time.Second)
	for _, name := range parked {
		r := getResource(t, srv.api, parkedKind, name)
		c := condition(r, "WorkerAvailable")
		if r.GetPhase() != client.PhaseReconciling || r.GetReconciles() != 0 || r.GetFailure() != nil ||
			c == nil || c.GetStatus() != "False" || !strings.Contains(c.GetMessage(), parkedKind) {
			t.Fatalf("resource of a kind no worker serves: %s, WorkerAvailable condition %v; "+
				"want Reconciling, never reconciled, no failure, WorkerAvailable=False naming kind %q", describe(r), c, parkedKind)
		}
	}

	startNoop(t, srv, "noop "+parkedKind, "-kinds", parkedKind+":1:reconcile")
	all := waitAllReady(t, srv.api, parkedKind, len(parked), 30*time.Second)
	checkAppliedOnce(t, all)
}
