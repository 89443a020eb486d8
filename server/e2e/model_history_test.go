//go:build unix

package e2e

import (
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// checkHistory holds every live resource's history and events to its row,
// whatever the case did to it (updates, rollouts, deletes and creates
// again under the same name): its newest revision is its current
// generation, kind version and spec; an applied resource (no owner) has
// exactly one Created event, of its own uid, and a composed child none,
// even once its owner has let it go;
// events list newest first.
func (w *world) checkHistory(t tb) {
	t.Helper()
	for k, r := range w.listAll(t) {
		h := mustCall(t, "history of "+k, w.api.GetResourceHistory, &convergev1.GetResourceHistoryRequest{
			Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName(), PageSize: 1})
		revs := h.GetRevisions()
		if len(revs) != 1 || revs[0].GetGeneration() != r.GetGeneration() || revs[0].GetKindVersion() != r.GetKindVersion() ||
			!proto.Equal(revs[0].GetSpec(), r.GetSpec()) {
			t.Fatalf("invariant broken: the newest revision of %s is %v, the resource is at generation %d v%d with spec %v",
				k, revs, r.GetGeneration(), r.GetKindVersion(), r.GetSpec())
		}
		created := 0
		var last int64
		req := &convergev1.ListEventsRequest{Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName(), PageSize: 100}
		for {
			resp := mustCall(t, "events of "+k, w.api.ListEvents, req)
			for _, e := range resp.GetEvents() {
				if last != 0 && e.GetId() >= last {
					t.Fatalf("invariant broken: events of %s not newest first: %d after %d", k, e.GetId(), last)
				}
				last = e.GetId()
				if e.GetReason() == "Created" && e.GetUid() == r.GetUid() {
					created++
				}
			}
			if resp.GetNextPageToken() == "" {
				break
			}
			req.PageToken = resp.GetNextPageToken()
		}
		// A composed child stays without a Created event after its owner
		// lets it go (a quarantined child outlives its composite's delete).
		want := 1
		if m := w.res[k]; r.GetOwner() != nil || m != nil && m.owner != "" {
			want = 0
		}
		if created != want {
			t.Fatalf("invariant broken: %s (owner %v) has %d Created events of uid %s, want %d", k, r.GetOwner(), created, r.GetUid(), want)
		}
	}
}
