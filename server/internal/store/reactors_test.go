package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// rbKinds registers the watched kind leaf v1 and the reactor kind pager v1.
func rbKinds(t *testing.T, s *store.Store) int64 {
	t.Helper()
	rev := applyKind(t, s, "leaf", store.Policy{})
	applyKind(t, s, "pager", store.Policy{})
	return rev
}

func rbBinding(name string) store.ReactorBinding {
	return store.ReactorBinding{Name: name, WatchKind: "leaf", Transitions: []string{"created", "failed"},
		ReactorKind: "pager", ReactorKindVersion: 1}
}

func rbWantErr(t *testing.T, err, sentinel error, parts ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want %v", err, sentinel)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("err = %v, want it to mention %q", err, p)
		}
	}
}

func TestReactorBindingCRUD(t *testing.T) {
	s, ctx := newStore(t)
	rbKinds(t, s)
	b, result, err := s.ApplyReactorBinding(ctx, rbBinding("page"))
	if err != nil || result != "created" || b.Revision != 1 || b.CreatedAt.IsZero() {
		t.Fatalf("create = %+v %q, %v", b, result, err)
	}
	if b, result, err = s.ApplyReactorBinding(ctx, rbBinding("page")); err != nil || result != "unchanged" || b.Revision != 1 {
		t.Fatalf("same again = %+v %q, %v", b, result, err)
	}
	edit := rbBinding("page")
	edit.Disabled, edit.LabelSelector, edit.Transitions = true, "env=prod", []string{"synced"}
	if b, result, err = s.ApplyReactorBinding(ctx, edit); err != nil || result != "configured" || b.Revision != 2 ||
		!b.Disabled || b.LabelSelector != "env=prod" || len(b.Transitions) != 1 || b.Transitions[0] != "synced" {
		t.Fatalf("edit = %+v %q, %v", b, result, err)
	}
	if _, _, err := s.ApplyReactorBinding(ctx, rbBinding("other")); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetReactorBinding(ctx, "page")
	if err != nil || got.Revision != 2 || !got.Disabled {
		t.Fatalf("get = %+v, %v", got, err)
	}
	all, err := s.ListReactorBindings(ctx, "")
	if err != nil || len(all) != 2 || all[0].Name != "other" || all[1].Name != "page" {
		t.Fatalf("list = %+v, %v", all, err)
	}
	if none, err := s.ListReactorBindings(ctx, "nothing"); err != nil || len(none) != 0 {
		t.Fatalf("list of another kind = %+v, %v", none, err)
	}
	if n, err := s.CountReactorBindings(ctx); err != nil || n != 2 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if err := s.DeleteReactorBinding(ctx, "page"); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetReactorBinding(ctx, "page")
	rbWantErr(t, err, store.ErrNotFound, `reactor binding "page" not found`)
	rbWantErr(t, s.DeleteReactorBinding(ctx, "page"), store.ErrNotFound, `"page"`)
}

func TestReactorBindingRefusals(t *testing.T) {
	s, ctx := newStore(t)
	rbKinds(t, s)
	b := rbBinding("page")
	b.ReactorKind = "nope"
	_, _, err := s.ApplyReactorBinding(ctx, b)
	rbWantErr(t, err, store.ErrInvalidBinding, "binding.reactor_kind", "nope v1")

	b = rbBinding("page")
	b.ReactorKindVersion = 2
	_, _, err = s.ApplyReactorBinding(ctx, b)
	rbWantErr(t, err, store.ErrInvalidBinding, "binding.reactor_kind", "pager v2")

	b = rbBinding("page")
	b.WatchKind = "ghost"
	_, _, err = s.ApplyReactorBinding(ctx, b)
	rbWantErr(t, err, store.ErrInvalidBinding, "binding.watch_kind", "no version of kind ghost")

	b = rbBinding("page")
	b.WatchKindVersion = 3
	_, _, err = s.ApplyReactorBinding(ctx, b)
	rbWantErr(t, err, store.ErrInvalidBinding, "binding.watch_kind_version", "leaf v3")

	if n, err := s.CountReactorBindings(ctx); err != nil || n != 0 {
		t.Fatalf("refused applies left %d bindings, %v", n, err)
	}
	// A specific registered version is fine.
	b.WatchKindVersion = 1
	if _, _, err := s.ApplyReactorBinding(ctx, b); err != nil {
		t.Fatal(err)
	}
}

func TestDeleteKindRefusedWhileBindingsUseIt(t *testing.T) {
	s, ctx := newStore(t)
	rbKinds(t, s)
	for _, name := range []string{"b2", "b1"} {
		if _, _, err := s.ApplyReactorBinding(ctx, rbBinding(name)); err != nil {
			t.Fatal(err)
		}
	}
	rbWantErr(t, s.DeleteKind(ctx, "pager", 1), store.ErrConflict, `pager v1`, `"b1", "b2"`)
	// The watched kind is not held by bindings.
	if err := s.DeleteKind(ctx, "leaf", 1); err != nil {
		t.Fatalf("deleting the watched kind: %v", err)
	}
	for _, name := range []string{"b1", "b2"} {
		if err := s.DeleteReactorBinding(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteKind(ctx, "pager", 1); err != nil {
		t.Fatalf("delete after the bindings went: %v", err)
	}
}

func countChanges(t *testing.T, s *store.Store) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM changes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPruneKeepsChangesTheEmitterHasNotRead(t *testing.T) {
	s, ctx := newStore(t)
	if err := s.StartReactorFeed(ctx); err != nil {
		t.Fatal(err)
	}
	rev := rbKinds(t, s)
	if _, _, err := s.ApplyReactorBinding(ctx, rbBinding("page")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		apply(t, s, rev, name, `{}`)
	}
	xid, err := s.CurrentXID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneChanges(ctx, xid, 1000); err != nil || n != 0 || countChanges(t, s) != 3 {
		t.Fatalf("prune with unread changes deleted %d (%v); %d left", n, err, countChanges(t, s))
	}
	// Past the hold, unread changes go anyway, and the emitter finds out.
	var aXID int64
	if err := s.Pool().QueryRow(ctx, `UPDATE changes SET at = now() - interval '25 hours' WHERE name = 'a'
		RETURNING xid::text::bigint`).Scan(&aXID); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneChanges(ctx, xid, 1000); err != nil || n != 1 || countChanges(t, s) != 2 {
		t.Fatalf("prune past the hold deleted %d (%v); %d left", n, err, countChanges(t, s))
	}
	var seen []string
	overtaken := false
	testkit.Poll(t, "the emitter to read b and c", func() []string {
		res, err := s.EmitReactorDeliveries(ctx, 100, func(_ []store.ReactorBinding, cs []store.WatchedChange) ([]store.Delivery, error) {
			for _, c := range cs {
				seen = append(seen, c.Name)
			}
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		overtaken = overtaken || res.Overtaken
		return seen
	}, func(seen []string) bool { return len(seen) >= 2 })
	if strings.Join(seen, ",") != "b,c" || !overtaken {
		t.Fatalf("the emitter read %v (overtaken %v); want b and c, and the pruned change reported", seen, overtaken)
	}
	if cur, err := s.ReactorCursor(ctx); err != nil || cur.XID < uint64(aXID) {
		t.Fatalf("cursor = %+v, %v; want it past a's transaction %d", cur, err, aXID)
	}
	// With no binding left, nothing holds the feed, and the cursor moves
	// along so a later binding does not report a loss.
	if err := s.DeleteReactorBinding(ctx, "page"); err != nil {
		t.Fatal(err)
	}
	apply(t, s, rev, "d", `{}`)
	xid, err = s.CurrentXID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.PruneChanges(ctx, xid, 1000); err != nil || n != 3 {
		t.Fatalf("prune without bindings deleted %d, %v; want 3", n, err)
	}
	if cur, err := s.ReactorCursor(ctx); err != nil || cur.XID != xid-1 {
		t.Fatalf("cursor = %+v, %v; want it moved to %d", cur, err, xid-1)
	}
}
