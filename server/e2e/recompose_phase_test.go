//go:build unix

package e2e

import (
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestRecomposeAfterPruneKeepsReady changes a composite's children's
// names, as docs/first-provider.md does: the composer drops one child and
// adds one. The dropped child's going runs the composer again at the same
// generation, and that answer changes nothing; so once the composite was
// Ready at the new generation (what apply --wait judges), the change feed
// never shows it Reconciling at that generation again.
func TestRecomposeAfterPruneKeepsReady(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	// The composer answers late, so the new child is Ready (and the
	// composite with it) before the answer to the recompose arrives.
	startSpecWorker(t, srv, "specworker", "-compose-delay", "300ms")
	const root = "renamed"
	doc := func(names ...string) compositeDoc {
		var d compositeDoc
		for _, n := range names {
			d.Children = append(d.Children, childDoc{Kind: kindPart, Name: n})
		}
		return d
	}
	applyComposite(t, srv.api, kindStack, root, doc("renamed-ada", "renamed-grace"))
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)

	log := watchChanges(t, srv.api)
	applyComposite(t, srv.api, kindStack, root, doc("renamed-ada", "renamed-linus"))
	// The composer ran twice at generation 2: for the new spec, and again
	// once renamed-grace was gone.
	composedTwice := func() bool {
		n := 0
		for _, e := range eventsOf(t, srv.api, kindStack, root) {
			if e.GetReason() == "Composed" && e.GetGeneration() == 2 {
				n++
			}
		}
		return n >= 2
	}
	waitResource(t, srv.api, kindStack, root, "Ready at generation 2, composed twice", composeTimeout,
		func(r *convergev1.Resource) bool {
			return r.GetPhase() == client.PhaseReady && r.GetSyncedGeneration() == 2 && composedTwice()
		})
	waitGone(t, srv.api, kindPart, "renamed-grace", composeTimeout)

	ready := func(c *convergev1.Change) bool {
		return phaseOf(kindStack, root, client.PhaseReady)(c) && c.GetSyncedGeneration() == 2 && c.GetGeneration() == 2
	}
	_, at := log.await(t, 0, "into Ready at generation 2", composeTimeout, ready)
	// The feed is ordered: once a later change has arrived, every change
	// of the composite's composes has too.
	applyComposite(t, srv.api, kindStack, "fence", compositeDoc{})
	log.await(t, at, "creating the fence", composeTimeout, func(c *convergev1.Change) bool {
		return c.GetKind() == kindStack && c.GetName() == "fence" && c.GetType() == "created"
	})
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, c := range log.changes[at+1:] {
		if c.GetKind() == kindStack && c.GetName() == root && (c.GetPhase() != client.PhaseReady || c.GetPreviousPhase() != client.PhaseReady) {
			t.Fatalf("after it was Ready at generation 2 the composite went %s: %s", c.GetPhase(), log.render(0))
		}
	}
}
