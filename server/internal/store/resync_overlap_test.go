package store_test

import (
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// TestSpecChangeDuringResync: a spec change applied while the resource's
// resync runs starts nothing beside it; the resync's result is superseded
// and the resource's reconcile then runs at the new generation.
func TestSpecChangeDuringResync(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{ResyncIntervalSeconds: 1})
	apply(t, s, rev, "a", `{}`)
	got := claimAll(t, s)
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{}`), ResyncAfter: time.Millisecond}}, fast); err != nil {
		t.Fatal(err)
	}
	got = testkitPoll(t, func() []store.Claimed {
		if _, err := s.QueueResyncs(ctx, 10); err != nil {
			t.Fatal(err)
		}
		return claimAll(t, s)
	})
	if len(got) != 1 || got[0].Trigger != trigger.Resync {
		t.Fatalf("claimed %+v; want one resync", got)
	}
	apply(t, s, rev, "a", `{"x":1}`)
	if again := claimAll(t, s); len(again) != 0 {
		t.Fatalf("while the resync runs claimed %+v; want nothing", again)
	}
	res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{"old":true}`)}}, fast)
	if err != nil || res[0].Applied || !res[0].Superseded {
		t.Fatalf("the resync's result: %+v %v; want it superseded", res, err)
	}
	got = claimAll(t, s)
	if len(got) != 1 || got[0].Trigger != trigger.SpecChange || got[0].Generation != 2 || string(got[0].Spec) != `{"x": 1}` {
		t.Fatalf("after the resync claimed %+v; want the specChange at generation 2", got)
	}
	if res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{}`)}}, fast); err != nil || !res[0].Applied {
		t.Fatalf("the specChange result: %+v %v", res, err)
	}
	if r, _ := s.GetResource(ctx, "default", "leaf", "a"); r.Phase != "Ready" || r.SyncedGeneration != 2 {
		t.Fatalf("phase %s synced generation %d; want Ready at 2", r.Phase, r.SyncedGeneration)
	}
}
