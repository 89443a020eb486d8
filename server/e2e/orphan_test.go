//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestOrphanGraceAndReadoption drops a child from a composite whose kind
// keeps dropped children graceSeconds: the child is Orphaned and not
// counted, so the composite stays Ready; emitted again within the grace it
// is re-adopted as it was (same resource, no generation bump, no
// reconcile); dropped again and left, it is deleted once the grace ends.
func TestOrphanGraceAndReadoption(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	startSpecWorker(t, srv, "specworker")
	const root, a, b, x = "og", "og-a", "og-b", "og-x"
	grace := graceSeconds * time.Second
	all := compositeDoc{Children: []childDoc{{Kind: kindPart, Name: a}, {Kind: kindPart, Name: b}, {Kind: kindPart, Name: x}}}
	without := compositeDoc{Children: all.Children[:2]}
	applyComposite(t, srv.api, kindGraced, root, all)
	waitRollup(t, srv.api, root, 3, 0)
	before := getResource(t, srv.api, kindPart, x)

	dropped := time.Now()
	applyComposite(t, srv.api, kindGraced, root, without)
	waitPhase(t, srv.api, kindPart, x, client.PhaseOrphaned)
	waitRollup(t, srv.api, root, 2, 1)
	// Re-emitted well within the grace, or this test proves nothing.
	if took := time.Since(dropped); took > grace-time.Second {
		t.Fatalf("the orphan was seen %s after it was dropped: too late to re-adopt it surely within the %s grace on this machine", took, grace)
	}

	applyComposite(t, srv.api, kindGraced, root, all)
	back := waitPhase(t, srv.api, kindPart, x, client.PhaseReady)
	if back.GetUid() != before.GetUid() || back.GetGeneration() != before.GetGeneration() || back.GetReconciles() != before.GetReconciles() {
		t.Errorf("the re-adopted child: %s, uid %s; want it as it was: %s, uid %s (no generation bump, no reconcile)",
			describe(back), back.GetUid(), describe(before), before.GetUid())
	}
	waitRollup(t, srv.api, root, 3, 0)

	dropped = time.Now()
	applyComposite(t, srv.api, kindGraced, root, without)
	waitPhase(t, srv.api, kindPart, x, client.PhaseOrphaned)
	waitRollup(t, srv.api, root, 2, 1)
	waitGone(t, srv.api, kindPart, x, composeTimeout)
	ev := lastEvent(t, srv.api, kindPart, x, "DeletionRequested")
	if at := ev.GetTime().AsTime(); at.Before(dropped.Add(grace)) || !strings.Contains(ev.GetMessage(), "grace") {
		t.Errorf("the orphan's deletion was requested at %s (%q), %s after it was dropped; want after the %s grace, saying so",
			stamp(at), ev.GetMessage(), at.Sub(dropped), grace)
	}
	waitRollup(t, srv.api, root, 2, 0)
}

// waitRollup waits until the graced composite is Ready with total live
// children, all ready, and excluded orphans.
func waitRollup(t *testing.T, c *client.Client, name string, total, excluded int32) *convergev1.Resource {
	t.Helper()
	what := fmt.Sprintf("Ready with %d of %d children ready and %d excluded", total, total, excluded)
	return waitResource(t, c, kindGraced, name, what, composeTimeout, func(r *convergev1.Resource) bool {
		ru := r.GetRollup()
		return r != nil && r.GetPhase() == client.PhaseReady && ru.GetTotal() == total && ru.GetReady() == total && ru.GetExcluded() == excluded
	})
}
