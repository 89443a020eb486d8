package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// claimAs claims the oldest ready leaf task for member.
func claimAs(t *testing.T, s *store.Store, member string) store.Claimed {
	t.Helper()
	got, err := s.Claim(context.Background(), member, time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("%s claimed %v, %v; want one task", member, got, err)
	}
	return got[0]
}

func heartbeat(t *testing.T, s *store.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := s.HeartbeatMember(context.Background(), store.Member{ID: id, Roles: []string{"broker"}, Hostname: "h"}); err != nil {
			t.Fatal(err)
		}
	}
}

func renew(t *testing.T, s *store.Store, member string, l store.Lease) {
	t.Helper()
	got, err := s.ExtendLeases(context.Background(), member, []store.Renewal{{Lease: l, Until: time.Now().Add(time.Minute)}})
	if err != nil || len(got) != 1 {
		t.Fatalf("renewing %+v: %v, %v", l, got, err)
	}
}

// TestLapsedClaims: a claim lapses once its claimer stopped heartbeating
// (or never had a row) and the claim went unrenewed for the liveness
// window. A live member's claims stay, and so do claims renewed lately by
// a member without a row (a worker resuming after a clean shutdown).
// Released tasks are claimable again, each with a ClaimerGone event naming
// the claimer; a claimer that comes back before the release keeps its
// claims.
func TestLapsedClaims(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	for _, name := range []string{"dead", "live", "resuming", "vanished", "revived"} {
		apply(t, s, rev, name, `{}`)
	}
	heartbeat(t, s, "m-dead", "m-live", "m-revived")
	leases := map[string]store.Lease{}
	for _, name := range []string{"dead", "live", "resuming", "vanished", "revived"} {
		leases[name] = claimAs(t, s, "m-"+name).Lease
	}
	lapse := store.Lapse{Lease: time.Minute, LiveWithin: time.Second}
	// Fresh claims have not lapsed, whoever holds them.
	if got, err := s.LapsedClaimers(ctx, lapse); err != nil || len(got) != 0 {
		t.Fatalf("lapsed claimers right after the claims = %v, %v; want none", got, err)
	}

	// m-live heartbeats and m-resuming renews (with no member row) all
	// along; the others fall silent.
	want := []string{"m-dead", "m-revived", "m-vanished"}
	testkit.Poll(t, fmt.Sprintf("lapsed claimers %v", want), func() []string {
		heartbeat(t, s, "m-live")
		renew(t, s, "m-resuming", leases["resuming"])
		got, err := s.LapsedClaimers(ctx, lapse)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range got {
			if !slices.Contains(want, id) {
				t.Fatalf("lapsed claimers = %v: %s holds live claims", got, id)
			}
		}
		return got
	}, func(got []string) bool { return slices.Equal(got, want) })

	// m-revived heartbeats again before the release; everyone is named.
	heartbeat(t, s, "m-revived", "m-live")
	renew(t, s, "m-resuming", leases["resuming"])
	n, err := s.ReleaseLapsedClaims(ctx, []string{"m-dead", "m-live", "m-resuming", "m-vanished", "m-revived"}, lapse, 100)
	if err != nil || n != 2 {
		t.Fatalf("released %d, %v; want 2 (dead's and vanished's)", n, err)
	}
	for name, claimed := range map[string]bool{"dead": false, "vanished": false, "live": true, "resuming": true, "revived": true} {
		r := get(t, s, name)
		if r.Task == nil || r.Task.Claimed != claimed {
			t.Errorf("%s: task %+v, want claimed=%v", name, r.Task, claimed)
		}
	}
	for _, name := range []string{"dead", "vanished"} {
		evs, err := s.ListEvents(ctx, store.EventFilter{Namespace: "default", Kind: "leaf", Name: name, Limit: 1})
		if err != nil || len(evs) != 1 {
			t.Fatalf("events of %s: %v, %v", name, evs, err)
		}
		if e := evs[0]; e.Reason != "ClaimerGone" || e.Type != "Warning" || e.Actor != "system" ||
			!strings.Contains(e.Message, "claimer m-"+name+" is gone") || e.Generation != 1 {
			t.Errorf("%s: last event = %+v; want a ClaimerGone warning naming m-%s", name, e, name)
		}
	}
	// A released task is claimed again under a new epoch; the old lease
	// can no longer be renewed.
	again := claimAs(t, s, "m-new")
	if again.TaskID != leases["dead"].TaskID && again.TaskID != leases["vanished"].TaskID {
		t.Fatalf("reclaimed task %d; want dead's or vanished's", again.TaskID)
	}
	if got, err := s.ExtendLeases(ctx, "m-dead", []store.Renewal{{Lease: leases["dead"], Until: time.Now().Add(time.Minute)}}); err != nil || len(got) != 0 {
		t.Fatalf("renewing a released lease: %v, %v; want nothing renewed", got, err)
	}
}

// TestReleaseLapsedClaimsNamesOnly: only the named claimers' lapsed
// claims go, at most limit a call.
func TestReleaseLapsedClaimsNamesOnly(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	for _, name := range []string{"a", "b", "c"} {
		apply(t, s, rev, name, `{}`)
	}
	claimAs(t, s, "m-one")
	claimAs(t, s, "m-one")
	claimAs(t, s, "m-two")
	lapse := store.Lapse{Lease: time.Minute, LiveWithin: 200 * time.Millisecond}
	testkit.Poll(t, "lapsed claimers m-one and m-two", func() []string {
		got, err := s.LapsedClaimers(ctx, lapse)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}, func(got []string) bool { return len(got) == 2 })
	for i, want := range []int{1, 1, 0} {
		n, err := s.ReleaseLapsedClaims(ctx, []string{"m-one"}, lapse, 1)
		if err != nil || n != want {
			t.Fatalf("release #%d of m-one: %d, %v; want %d", i+1, n, err, want)
		}
	}
	if r := get(t, s, "c"); r.Task == nil || !r.Task.Claimed {
		t.Fatalf("m-two's task was released without being named: %+v", r.Task)
	}
}
