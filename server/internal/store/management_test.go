package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// every asks for tasks of leaf v1 of each reconcile trigger.
var every = []store.Want{
	{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 10},
	{Kind: "leaf", Version: 1, Trigger: trigger.Observe, N: 10},
	{Kind: "leaf", Version: 1, Trigger: trigger.Resync, N: 10},
	{Kind: "leaf", Version: 1, Trigger: trigger.DeleteRequested, N: 10},
}

func claimAll(t *testing.T, s *store.Store) []store.Claimed {
	t.Helper()
	got, err := s.Claim(context.Background(), "m1", time.Minute, every)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func observes(string, int32) bool { return true }

// TestObservedResource: an observed resource's reconcile runs as observe
// and carries its import id; moving it to full is one recorded change
// after which its reconcile runs as specChange, and back again.
func TestObservedResource(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	key := store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "vpc"}
	if _, _, err := s.ApplyResources(ctx, "alice", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
		Name: "vpc", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev,
		ManagementPolicy: trigger.PolicyObserve, ImportID: "vpc-0abc"}}); err != nil {
		t.Fatal(err)
	}
	got := claimAll(t, s)
	if len(got) != 1 || got[0].Trigger != trigger.Observe || got[0].ImportID != "vpc-0abc" {
		t.Fatalf("claimed %+v; want one observe task with import id vpc-0abc", got)
	}
	if res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{"cidr":"10.0.0.0/16"}`)}}, fast); err != nil || !res[0].Applied {
		t.Fatalf("observe result: %+v %v", res, err)
	}
	r, _ := s.GetResource(ctx, "default", "leaf", "vpc")
	if r.Phase != "Ready" || !r.Observed || r.ManagementPolicy != "observe" || r.ImportID != "vpc-0abc" {
		t.Fatalf("after observe: phase %s observed %v policy %q import %q", r.Phase, r.Observed, r.ManagementPolicy, r.ImportID)
	}

	// A spec change applied without a policy or an import keeps both: an
	// apply never promotes an observed resource by leaving them out.
	if _, _, err := s.ApplyResources(ctx, "alice", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
		Name: "vpc", Labels: []byte(`{}`), Spec: []byte(`{"tag":"x"}`), KindRevision: rev}}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.GetResource(ctx, "default", "leaf", "vpc"); !r.Observed || r.ImportID != "vpc-0abc" || r.Generation != 2 {
		t.Fatalf("after an apply naming neither: observed %v, import %q, generation %d", r.Observed, r.ImportID, r.Generation)
	}
	got = claimAll(t, s)
	if len(got) != 1 || got[0].Trigger != trigger.Observe || got[0].Generation != 2 {
		t.Fatalf("after the spec change claimed %+v; want one observe at generation 2", got)
	}
	if res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{"cidr":"10.0.0.0/16"}`)}}, fast); err != nil || !res[0].Applied {
		t.Fatalf("observe result: %+v %v", res, err)
	}

	r, changed, err := s.SetManagementPolicy(ctx, "bob", key, trigger.PolicyFull, "take over", observes)
	if err != nil || !changed || r.Observed {
		t.Fatalf("promote: changed %v observed %v, %v", changed, r.Observed, err)
	}
	got = claimAll(t, s)
	if len(got) != 1 || got[0].Trigger != trigger.SpecChange {
		t.Fatalf("after promotion claimed %+v; want one specChange", got)
	}
	if _, changed, err := s.SetManagementPolicy(ctx, "bob", key, trigger.PolicyFull, "", observes); err != nil || changed {
		t.Fatalf("the same policy again: changed %v, %v", changed, err)
	}
	// Back to observe while the specChange runs: nothing else of the
	// resource may run until its handler returns (it still holds its
	// in-flight slot), and then its result is discarded and the observe
	// runs at the resource's generation.
	if _, _, err := s.SetManagementPolicy(ctx, "carol", key, trigger.PolicyObserve, "", observes); err != nil {
		t.Fatal(err)
	}
	if again := claimAll(t, s); len(again) != 0 {
		t.Fatalf("while the demoted specChange runs claimed %+v; want nothing", again)
	}
	if res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{"cidr":"changed"}`)}}, fast); err != nil || res[0].Applied || !res[0].Superseded {
		t.Fatalf("a specChange result after the demotion: %+v %v; want it superseded", res, err)
	}
	got = claimAll(t, s)
	if len(got) != 1 || got[0].Trigger != trigger.Observe || got[0].Generation != 2 {
		t.Fatalf("after demotion claimed %+v; want one observe at generation 2", got)
	}
	if res, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: got[0].Lease, Status: []byte(`{"cidr":"10.0.0.0/16"}`)}}, fast); err != nil || !res[0].Applied {
		t.Fatalf("observe result after the demotion: %+v %v", res, err)
	}
	if r, _ := s.GetResource(ctx, "default", "leaf", "vpc"); r.Phase != "Ready" || r.SyncedGeneration != 2 {
		t.Fatalf("after the observe: phase %s synced generation %d; want Ready at 2", r.Phase, r.SyncedGeneration)
	}
	events, err := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "leaf", Name: "vpc"})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, e := range events {
		if e.Reason == "ManagementPolicyChanged" {
			changes = append(changes, e.Actor+": "+e.Message)
		}
	}
	want := []string{"carol: management policy full -> observe", "bob: management policy observe -> full: take over"} // newest first
	if strings.Join(changes, "|") != strings.Join(want, "|") {
		t.Fatalf("policy events %q; want %q", changes, want)
	}

	// Refused without an observe reaction, leaving nothing changed.
	none := func(string, int32) bool { return false }
	if _, _, err := s.SetManagementPolicy(ctx, "bob", key, "", "", none); err != nil {
		t.Fatalf("back to the kind's (full) policy: %v", err)
	}
	if _, _, err := s.SetManagementPolicy(ctx, "bob", key, trigger.PolicyObserve, "", none); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "M26") {
		t.Fatalf("observe without an observe reaction: %v; want a conflict naming M26", err)
	}
	if r, _ := s.GetResource(ctx, "default", "leaf", "vpc"); r.ManagementPolicy != "" {
		t.Fatalf("the refused change left policy %q", r.ManagementPolicy)
	}
}

// TestObservedDeleteForgets: deleting an observed resource never queues
// its teardown reaction: it is forgotten, its external object left alone.
func TestObservedDeleteForgets(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{ManagementPolicy: trigger.PolicyObserve})
	apply(t, s, rev, "vpc", `{}`)
	if got := claimAll(t, s); len(got) != 1 || got[0].Trigger != trigger.Observe {
		t.Fatalf("a resource of an observed kind claimed %+v; want one observe", got)
	}
	key := store.ResourceKey{Namespace: "default", Kind: "leaf", Name: "vpc"}
	_, gone, err := s.DeleteResource(ctx, "alice", key, store.TeardownPolicy{Reaction: true})
	if err != nil || !gone {
		t.Fatalf("delete: gone %v, %v; want it forgotten at once", gone, err)
	}
	events, _ := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "leaf", Name: "vpc"})
	if last := events[0]; !strings.Contains(last.Message, "management policy observe") {
		t.Fatalf("last event %q; want it to say the observed resource was forgotten", last.Message)
	}
	assertNoTasks(t, s)
}

// TestKindPolicyMovesResources: changing a kind version's management
// policy moves the work of the resources that follow it, not of those
// with a policy of their own, and records the change on each.
func TestKindPolicyMovesResources(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "follows", `{}`)
	if _, _, err := s.ApplyResources(ctx, "alice", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
		Name: "own", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev, ManagementPolicy: trigger.PolicyFull}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateKindPolicy(ctx, "dana", "leaf", 1, rev, store.Policy{ManagementPolicy: trigger.PolicyObserve}, 0, 0); err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, c := range claimAll(t, s) {
		byName[c.Name] = c.Trigger
	}
	if byName["follows"] != trigger.Observe || byName["own"] != trigger.SpecChange || len(byName) != 2 {
		t.Fatalf("claimed %v; want follows observed and own managed", byName)
	}
	events, _ := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "leaf", Name: "follows"})
	if last := events[0]; last.Reason != "ManagementPolicyChanged" || last.Actor != "dana" {
		t.Fatalf("last event of follows: %+v", last)
	}
}

// TestObservedResync: an observed resource is re-observed on its kind's
// interval, as observe, and a kind policy edit schedules observed and
// managed resources by their own intervals.
func TestObservedResync(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{ResyncIntervalSeconds: 1})
	if _, _, err := s.ApplyResources(ctx, "alice", []store.ApplyInput{
		{Namespace: "default", Kind: "leaf", KindVersion: 1, Name: "seen", Labels: []byte(`{}`), Spec: []byte(`{}`),
			KindRevision: rev, ManagementPolicy: trigger.PolicyObserve},
		{Namespace: "default", Kind: "leaf", KindVersion: 1, Name: "run", Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev},
	}); err != nil {
		t.Fatal(err)
	}
	var outs []store.Outcome
	for _, c := range claimAll(t, s) {
		outs = append(outs, store.Outcome{Lease: c.Lease, Status: []byte(`{}`)})
	}
	if res, err := s.ApplyOutcomes(ctx, outs, fast); err != nil || len(res) != 2 {
		t.Fatalf("results: %+v %v", res, err)
	}
	// Only observed resources re-observe: the managed one's interval is 0.
	if _, err := s.UpdateKindPolicy(ctx, "dana", "leaf", 1, rev, store.Policy{ResyncIntervalSeconds: 2}, 0, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	got := testkitPoll(t, func() []store.Claimed {
		if _, err := s.QueueResyncs(ctx, 10); err != nil {
			t.Fatal(err)
		}
		return claimAll(t, s)
	})
	if len(got) != 1 || got[0].Name != "seen" || got[0].Trigger != trigger.Observe {
		t.Fatalf("re-observations claimed %+v; want one observe of seen", got)
	}
}

func testkitPoll(t *testing.T, f func() []store.Claimed) []store.Claimed {
	t.Helper()
	return testkit.PollWithin(t, 5*time.Second, "a re-observation", f, func(got []store.Claimed) bool { return len(got) > 0 })
}
