package store_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

var operationIDPattern = regexp.MustCompile(`^[0-9a-hjkmnp-tv-z]{26}$`)

func TestNewOperationID(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a, err := store.NewOperationID(at)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := store.NewOperationID(at)
	later, _ := store.NewOperationID(at.Add(time.Millisecond))
	if !operationIDPattern.MatchString(a) || a == b {
		t.Fatalf("ids %q, %q: want distinct 26-character lower-case Crockford base32", a, b)
	}
	if a[:10] != b[:10] || !(a < later && b < later) {
		t.Fatalf("ids %q, %q then %q a millisecond later: the time prefix must order them", a, b, later)
	}
}

func TestInvokeOperation(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	req := store.OperationRequest{Key: leafKey("a"), Verb: "restart", Input: []byte(`{"force":true}`),
		KindVersion: 1, KindRevision: rev, Actor: "alice", Reason: "wedged"}
	op, err := s.InvokeOperation(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !operationIDPattern.MatchString(op.ID) || op.State != "pending" || op.Verb != "restart" || op.Actor != "alice" ||
		op.Reason != "wedged" || op.Name != "a" || op.Attempts != 0 || op.FinishedAt != nil || op.Output != nil {
		t.Fatalf("operation = %+v", op)
	}
	wantEvent(t, lastEvent(t, s, "a"), "OperationRequested", "alice", "operation restart requested (id "+op.ID+")", "wedged")

	// The task carries the operation, at the resource's generation.
	var trigger, key string
	var payload []byte
	var gen int64
	if err := s.Pool().QueryRow(ctx, `SELECT trigger, key, payload, generation FROM tasks WHERE key <> ''`).Scan(
		&trigger, &key, &payload, &gen); err != nil {
		t.Fatal(err)
	}
	var p struct {
		ID, Verb string
		Input    map[string]any
	}
	if err := json.Unmarshal(payload, &p); err != nil || trigger != "operation:restart" || key != op.ID || gen != 1 ||
		p.ID != op.ID || p.Verb != "restart" || p.Input["force"] != true {
		t.Fatalf("task = %s %s gen %d payload %s (%v)", trigger, key, gen, payload, err)
	}
	// It is claimed for the worker serving the verb.
	got, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: "operation:restart", N: 5}})
	if err != nil || len(got) != 1 || got[0].Key != op.ID || string(got[0].Payload) != string(payload) {
		t.Fatalf("claim = %+v, %v", got, err)
	}

	// Newest first; Get by id.
	req.Reason = "again"
	second, err := s.InvokeOperation(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.ListOperations(ctx, leafKey("a"))
	if err != nil || len(list) != 2 || list[0].ID != second.ID || list[1].ID != op.ID {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if list[1].State != "running" {
		t.Fatalf("claimed operation state = %s, want running", list[1].State)
	}
	if g, err := s.GetOperation(ctx, second.ID); err != nil || g.Reason != "again" || string(g.Input) != `{"force": true}` {
		t.Fatalf("get = %+v, %v", g, err)
	}
	if _, err := s.GetOperation(ctx, "00000000000000000000000000"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
	if _, err := s.ListOperations(ctx, leafKey("nope")); !errors.Is(err, store.ErrNotFound) ||
		!strings.Contains(err.Error(), "default/leaf/nope") {
		t.Fatalf("list unknown resource: %v", err)
	}
}

func TestListOperationsIsBounded(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	apply(t, s, rev, "a", `{}`)
	for i := 0; i < store.MaxListedOperations+5; i++ {
		if _, err := s.InvokeOperation(ctx, store.OperationRequest{Key: leafKey("a"), Verb: "ping", Input: []byte(`{}`),
			KindVersion: 1, KindRevision: rev, Actor: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListOperations(ctx, leafKey("a"))
	if err != nil || len(list) != store.MaxListedOperations {
		t.Fatalf("listed %d, %v; want %d", len(list), err, store.MaxListedOperations)
	}
	for i := 1; i < len(list); i++ {
		if list[i].RequestedAt.After(list[i-1].RequestedAt) {
			t.Fatalf("list is not newest first at %d", i)
		}
	}
}

func TestInvokeOperationRefusals(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	req := func(name string) store.OperationRequest {
		return store.OperationRequest{Key: leafKey(name), Verb: "restart", Input: []byte(`{}`), KindVersion: 1,
			KindRevision: rev, Actor: "alice"}
	}
	if _, err := s.InvokeOperation(ctx, req("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	apply(t, s, rev, "q", `{}`)
	if _, _, err := s.QuarantineResource(ctx, "bob", leafKey("q"), "hold"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InvokeOperation(ctx, req("q")); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("quarantined: %v", err)
	}
	apply(t, s, rev, "gone", `{}`)
	if _, _, err := s.DeleteResource(ctx, "t", leafKey("gone"), store.TeardownPolicy{Reaction: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InvokeOperation(ctx, req("gone")); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "being deleted") {
		t.Fatalf("deleting: %v", err)
	}
	// Input validated against another kind version or revision is stale.
	apply(t, s, rev, "a", `{}`)
	stale := req("a")
	stale.KindRevision = rev + 1
	if _, err := s.InvokeOperation(ctx, stale); !errors.Is(err, store.ErrStaleKind) {
		t.Fatalf("stale revision: %v", err)
	}
	stale = req("a")
	stale.KindVersion = 2
	if _, err := s.InvokeOperation(ctx, stale); !errors.Is(err, store.ErrStaleKind) {
		t.Fatalf("stale version: %v", err)
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM operations) + (SELECT count(*) FROM tasks WHERE key <> '')
		+ (SELECT count(*) FROM events WHERE reason = 'OperationRequested')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d operation rows, tasks or events left by refusals (%v)", n, err)
	}
}
