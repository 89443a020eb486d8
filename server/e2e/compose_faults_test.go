//go:build unix

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestComposerOverTheChildLimit has a composer return one child more than
// the limit of 100,000: the compose fails terminally naming the limit, and
// not one child is created.
func TestComposerOverTheChildLimit(t *testing.T) {
	begin(t)
	db := pgtest.New(t)
	srv := startServer(t, db.URL, fast)
	applySpecKinds(t, srv.api)
	startSpecWorker(t, srv, "specworker")
	const root, n = "huge", 100_001
	applyComposite(t, srv.api, kindStack, root, compositeDoc{Bulk: &bulkDoc{Kind: kindInert, Count: n}})

	r := waitPhase(t, srv.api, kindStack, root, client.PhaseFailed)
	if f := r.GetFailure(); !f.GetTerminal() || !regexp.MustCompile(`\b100,?000\b`).MatchString(f.GetMessage()) {
		t.Errorf("the failure of a compose of %d children: %v; want terminal, naming the limit of 100,000", n, f)
	}
	if c := childCount(t, db.Pool, kindStack, root); c != 0 {
		t.Errorf("a refused compose left %d children", c)
	}
	if inert := listResources(t, srv.api, kindInert); len(inert) != 0 {
		t.Errorf("a refused compose left %d %s resources", len(inert), kindInert)
	}
}

// TestChildDeletedByHandComesBack deletes a child its composite still
// wants: the composite composes again at once (R-4: the server's failsafe
// poll is slowed to pollForHandDeletion so only a wake-up can be prompt),
// the child is recreated (a new resource, Ready again), and the
// composite's events say a child was created.
func TestChildDeletedByHandComesBack(t *testing.T) {
	begin(t)
	timing := fast
	timing.poll = pollForHandDeletion
	srv := startServer(t, pgtest.New(t).URL, timing)
	applySpecKinds(t, srv.api)
	startSpecWorker(t, srv, "specworker")
	const root, kept, lost = "keep", "keep-a", "keep-b"
	applyComposite(t, srv.api, kindStack, root, compositeDoc{Children: []childDoc{{Kind: kindPart, Name: kept}, {Kind: kindPart, Name: lost}}})
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)
	before := getResource(t, srv.api, kindPart, lost)

	deleteResource(t, srv.api, kindPart, lost)
	after := waitResource(t, srv.api, kindPart, lost, "recreated and Ready", composeTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetUid() != before.GetUid() && r.GetPhase() == client.PhaseReady
	})
	if after.GetOwner().GetKind() != kindStack || after.GetOwner().GetName() != root {
		t.Errorf("the recreated child is owned by %v; want %s/%s", after.GetOwner(), kindStack, root)
	}
	top := waitPhase(t, srv.api, kindStack, root, client.PhaseReady)
	if ru := top.GetRollup(); ru.GetTotal() != 2 || ru.GetReady() != 2 {
		t.Errorf("the composite after the child came back: %s; want 2 of 2 children ready", explain(top))
	}

	deleted := lastEvent(t, srv.api, kindPart, lost, "Deleted")
	var recomposed *convergev1.Event
	for _, e := range eventsOf(t, srv.api, kindStack, root) {
		if e.GetReason() == "Composed" && e.GetId() > deleted.GetId() {
			recomposed = e
		}
	}
	if recomposed == nil || !strings.Contains(recomposed.GetMessage(), "1 created") ||
		!strings.Contains(recomposed.GetMessage(), "created "+kindPart+"/"+lost) {
		t.Fatalf("after part/%s was deleted (event %d), the composite's events are: %s; want a Composed event naming the child it created again",
			lost, deleted.GetId(), renderEvents(eventsOf(t, srv.api, kindStack, root)))
	}
	if lag := recomposed.GetTime().AsTime().Sub(deleted.GetTime().AsTime()); lag > reactLag {
		t.Errorf("the composite composed again %s after its child was deleted; want within %s. The deletion queued the "+
			"compose in its transaction, but nothing woke the server's dispatcher: only its failsafe poll (every %s here) found it",
			lag.Round(time.Millisecond), reactLag, pollForHandDeletion)
	}
}

// pollForHandDeletion is the failsafe poll of TestChildDeletedByHandComesBack:
// far longer than reactLag.
const pollForHandDeletion = 5 * time.Second

// reactLag bounds how long work queued by a change may wait to start.
const reactLag = time.Second
