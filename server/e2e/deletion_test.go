//go:build unix

package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// chainDoc is a stack of three fin children where c depends on b and b
// on a, each receiving its dependency's id.
func chainDoc(a, b, c string) compositeDoc {
	id := []flowDoc{{From: "/id", To: "/upstream"}}
	return compositeDoc{
		Children: []childDoc{{Kind: kindFin, Name: a}, {Kind: kindFin, Name: b}, {Kind: kindFin, Name: c}},
		Edges: []edgeDoc{
			{Dependent: kindFin + "/" + b, Dependency: kindFin + "/" + a, Flows: id},
			{Dependent: kindFin + "/" + c, Dependency: kindFin + "/" + b, Flows: id},
		},
	}
}

// TestDeletionOrder deletes a composite whose children form a chain
// a <- b <- c, each with a teardown: the worker's records and the Deleted
// events show c torn down and removed before b's teardown started, b
// before a's, and a before the composite.
func TestDeletionOrder(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	records := recordFile(t)
	startSpecWorker(t, srv, "specworker", "-record", records)
	const root, a, b, c = "del", "del-a", "del-b", "del-c"
	applyComposite(t, srv.api, kindStack, root, chainDoc(a, b, c))
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)

	deleteResource(t, srv.api, kindStack, root)
	waitGone(t, srv.api, kindStack, root, composeTimeout)

	all := readRecords(t, records)
	teardown := map[string]workerRecord{}
	for _, name := range []string{a, b, c} {
		rs := recordsOf(all, "teardown", kindFin, name)
		if len(rs) != 1 || rs[0].Error != "" {
			t.Fatalf("fin/%s was torn down %d times; want once, successfully. Records: %s", name, len(rs), renderRecords(all))
		}
		teardown[name] = rs[0]
	}
	type step struct{ kind, name string }
	order := []step{{kindFin, c}, {kindFin, b}, {kindFin, a}, {kindStack, root}}
	deleted := map[string]time.Time{}
	for _, s := range order {
		deleted[s.name] = lastEvent(t, srv.api, s.kind, s.name, "Deleted").GetTime().AsTime()
	}
	for i := 1; i < len(order); i++ {
		prev, next := order[i-1], order[i]
		if !deleted[prev.name].Before(deleted[next.name]) {
			t.Errorf("%s/%s was removed at %s, not after %s/%s at %s: dependents go first, the composite last",
				next.kind, next.name, stamp(deleted[next.name]), prev.kind, prev.name, stamp(deleted[prev.name]))
		}
		if next.kind == kindFin && !deleted[prev.name].Before(teardown[next.name].Start) {
			t.Errorf("the teardown of fin/%s started at %s, before its dependent %s/%s was removed at %s",
				next.name, stamp(teardown[next.name].Start), prev.kind, prev.name, stamp(deleted[prev.name]))
		}
	}
	if t.Failed() {
		t.Logf("records: %s", renderRecords(all))
	}
}

func stamp(at time.Time) string { return at.Format("15:04:05.000000") }

// TestFailingTeardownHoldsItsAncestors has the teardown of one child fail:
// its dependent goes, it stays Deleting with the failure's message and a
// growing attempt count (retried with backoff), and the composite waits.
// Once the teardown succeeds, the child and then the composite go.
func TestFailingTeardownHoldsItsAncestors(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	const root, a, b, msg = "stuck", "stuck-a", "stuck-b", "volume still attached"
	records := recordFile(t)
	w := startSpecWorker(t, srv, "specworker -fail-teardown", "-record", records, "-fail-teardown", a+":"+msg)
	applyComposite(t, srv.api, kindStack, root, compositeDoc{
		Children: []childDoc{{Kind: kindFin, Name: a}, {Kind: kindFin, Name: b}},
		Edges:    []edgeDoc{{Dependent: kindFin + "/" + b, Dependency: kindFin + "/" + a}},
	})
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)

	deleteResource(t, srv.api, kindStack, root)
	waitGone(t, srv.api, kindFin, b, composeTimeout)
	const attempts = 3
	stuck := waitResource(t, srv.api, kindFin, a, "Deleting with its teardown failed 3 times", composeTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseDeleting && r.GetFailure().GetAttempts() >= attempts
	})
	if f := stuck.GetFailure(); f.GetMessage() != msg || f.GetTerminal() {
		t.Errorf("the failing teardown's failure: %v; want the transient message %q", f, msg)
	}
	failures := 0
	for _, e := range eventsOf(t, srv.api, kindFin, a) {
		if e.GetReason() == "TransientFailure" && strings.Contains(e.GetMessage(), msg) {
			failures++
		}
	}
	if failures < attempts {
		t.Errorf("fin/%s has %d TransientFailure events naming %q; want at least %d", a, failures, msg, attempts)
	}
	// Retried with backoff: the first retry waits at least half the base
	// delay (the jitter keeps half of it at least), later ones longer.
	tries := recordsOf(readRecords(t, records), "teardown", kindFin, a)
	for i := 1; i < len(tries); i++ {
		if gap := tries[i].Start.Sub(tries[i-1].Start); gap < fast.retryBase/2 {
			t.Errorf("teardown attempt %d of fin/%s started %s after the one before; want a backoff of at least %s: %s",
				i+1, a, gap, fast.retryBase/2, renderRecords(tries))
		}
	}
	top := getResource(t, srv.api, kindStack, root)
	if top.GetPhase() != client.PhaseDeleting {
		t.Errorf("the composite while a child's teardown fails: %s; want it still there, Deleting", explain(top))
	}

	// The fault is gone: the teardown succeeds and the composite follows.
	w.signal(t, syscall.SIGTERM)
	if code := w.wait(t, drainTimeout); code != 0 {
		t.Fatalf("specworker exited with code %d after SIGTERM, want 0", code)
	}
	startSpecWorker(t, srv, "specworker", "-record", records)
	waitGone(t, srv.api, kindStack, root, composeTimeout)
	gone := lastEvent(t, srv.api, kindFin, a, "Deleted").GetTime().AsTime()
	if rootGone := lastEvent(t, srv.api, kindStack, root, "Deleted").GetTime().AsTime(); !gone.Before(rootGone) {
		t.Errorf("the composite was removed at %s, before its child fin/%s at %s", stamp(rootGone), a, stamp(gone))
	}
	if n := len(recordsOf(readRecords(t, records), "teardown", kindFin, a)); n < attempts+1 {
		t.Errorf("fin/%s's teardown ran %d times; want at least %d failures and a success", a, n, attempts)
	}
}

// TestDeleteWhileChildrenReconcile deletes a landing zone while its
// children's tasks run on a slow worker: everything goes, and once the
// worker has drained (reported the results of the tasks it was running),
// nothing of the zone is left in the database.
func TestDeleteWhileChildrenReconcile(t *testing.T) {
	begin(t)
	db := pgtest.New(t)
	srv := startServer(t, db.URL, fast)
	applyLandingZoneKinds(t, srv)
	const zone, accounts = "doomed", 5
	lz := startLandingZone(t, srv, "landingzone -delay", "-delay", "2s")
	if res := conctl(t, srv, zoneDoc(zone, accounts, ""), "apply", "-f", "-"); res.code != 0 {
		t.Fatalf("apply of a landing zone:\n%s", res)
	}
	// The accounts' tasks are running.
	waitDispatched(t, db.Pool, accounts, 200*time.Millisecond)
	if ready := listResources(t, srv.api, kindAccount, client.PhaseReady); len(ready) > 0 {
		t.Fatalf("%d accounts were Ready before the delete; the worker's -delay is too short for this machine", len(ready))
	}

	deleteResource(t, srv.api, kindZone, zone)
	waitGone(t, srv.api, kindZone, zone, composeTimeout)
	// Draining makes the worker finish its tasks and report them first.
	lz.signal(t, syscall.SIGTERM)
	if code := lz.wait(t, drainTimeout); code != 0 {
		t.Fatalf("landingzone exited with code %d after SIGTERM, want 0", code)
	}
	for _, table := range []string{"resources", "tasks", "edges"} {
		if n := countRows(t, db.Pool, "SELECT count(*) FROM "+table); n != 0 {
			t.Errorf("%d rows left in %s after the zone was deleted; want none", n, table)
		}
	}
}

// TestRetainForgetsWithoutTeardown deletes two resources of a kind with a
// teardown: the one whose deletion_policy is retain is forgotten without
// its teardown running; the other is torn down.
func TestRetainForgetsWithoutTeardown(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	records := recordFile(t)
	startSpecWorker(t, srv, "specworker", "-record", records)
	const kept, dropped = "kept", "dropped"
	docs := "type: resource\nkind: fin\nkind_version: 1\nname: " + kept + "\ndeletion_policy: retain\nspec: {}\n---\n" +
		"type: resource\nkind: fin\nkind_version: 1\nname: " + dropped + "\nspec: {}\n"
	if res := conctl(t, srv, docs, "apply", "-f", "-", "--wait"); res.code != 0 || !strings.Contains(res.stdout, "2 of 2 resources ready") {
		t.Fatalf("apply --wait of two fin resources:\n%s", res)
	}
	if got := getResource(t, srv.api, kindFin, kept).GetDeletionPolicy(); got != "retain" {
		t.Fatalf("fin/%s has deletion_policy %q; want retain", kept, got)
	}
	for _, name := range []string{kept, dropped} {
		if res := conctl(t, srv, "", "delete", "resource", kindFin+"/"+name, "--wait"); res.code != 0 {
			t.Fatalf("delete --wait of fin/%s:\n%s", name, res)
		}
		waitGone(t, srv.api, kindFin, name, composeTimeout)
	}
	all := readRecords(t, records)
	if n := len(recordsOf(all, "teardown", kindFin, kept)); n != 0 {
		t.Errorf("the teardown of fin/%s (deletion_policy retain) ran %d times; want never. Records: %s", kept, n, renderRecords(all))
	}
	if n := len(recordsOf(all, "teardown", kindFin, dropped)); n != 1 {
		t.Errorf("the teardown of fin/%s ran %d times; want once. Records: %s", dropped, n, renderRecords(all))
	}
	if e := lastEvent(t, srv.api, kindFin, kept, "Deleted"); !strings.Contains(e.GetMessage(), "retain") {
		t.Errorf("fin/%s's Deleted event says %q; want it to say the deletion policy retain skipped the teardown", kept, e.GetMessage())
	}
}

// TestComposeAnsweredWhileDeleting deletes a composite while its composer
// is working out a new child set, and holds the deletion up (a child's
// teardown fails) until the composer has answered: the answer must not
// add a live child to a composite being deleted. Once the teardown
// succeeds, everything goes.
func TestComposeAnsweredWhileDeleting(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	const root, a, b, msg = "late", "late-a", "late-b", "device busy"
	records := recordFile(t)
	w := startSpecWorker(t, srv, "specworker -compose-delay -fail-teardown",
		"-record", records, "-compose-delay", "1s", "-fail-teardown", a+":"+msg)
	applyComposite(t, srv.api, kindStack, root, compositeDoc{Children: []childDoc{{Kind: kindFin, Name: a}}})
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)

	applyComposite(t, srv.api, kindStack, root, compositeDoc{Children: []childDoc{{Kind: kindFin, Name: a}, {Kind: kindFin, Name: b}}})
	waitOutputCount(t, w, "composing "+kindStack+"/"+root, 2, composeTimeout)
	deleteResource(t, srv.api, kindStack, root)
	waitResource(t, srv.api, kindFin, a, "Deleting with its teardown failing", composeTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseDeleting && r.GetFailure().GetMessage() == msg
	})
	// Draining makes the worker report the compose it is running and wait
	// for the server to take it.
	w.signal(t, syscall.SIGTERM)
	if code := w.wait(t, drainTimeout); code != 0 {
		t.Fatalf("specworker exited with code %d after SIGTERM, want 0", code)
	}
	composes := recordsOf(readRecords(t, records), "compose", kindStack, root)
	if len(composes) != 2 {
		t.Fatalf("the worker answered %d composes of %s/%s before it exited; want 2", len(composes), kindStack, root)
	}
	requested := lastEvent(t, srv.api, kindStack, root, "DeletionRequested").GetTime().AsTime()
	if answered := composes[1].End; !requested.Before(answered) {
		t.Fatalf("the composer answered at %s, before the deletion was requested at %s: this machine is too slow for "+
			"the worker's -compose-delay, and the test proves nothing", stamp(answered), stamp(requested))
	}
	if r, err := tryGetResource(srv.api, kindFin, b); err != nil {
		t.Fatal(err)
	} else if r != nil && r.GetPhase() != client.PhaseDeleting {
		t.Fatalf("the compose answered after %s/%s was deleted created a live child: %s. The composite (%s) can never "+
			"finish deleting: its teardown waits for a child that nothing deletes",
			kindStack, root, explain(r), describe(getResource(t, srv.api, kindStack, root)))
	}

	startSpecWorker(t, srv, "specworker")
	waitGone(t, srv.api, kindFin, a, composeTimeout)
	waitResource(t, srv.api, kindStack, root, "gone with all its children", composeTimeout, func(r *convergev1.Resource) bool {
		return r == nil
	})
}
