package store_test

import (
	"context"
	"testing"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// settle claims and succeeds every queued specChange task of leaf.
func settle(t *testing.T, s *store.Store) {
	t.Helper()
	settleKind(t, s, "leaf")
}

// settleKind claims and succeeds every queued specChange task of kind v1.
func settleKind(t *testing.T, s *store.Store, kind string) {
	t.Helper()
	for {
		got, err := s.Claim(context.Background(), "m1", 60e9, []store.Want{{Kind: kind, Version: 1, Trigger: trigger.SpecChange, N: 100}})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			return
		}
		outs := make([]store.Outcome, len(got))
		for i, c := range got {
			outs[i] = store.Outcome{Lease: c.Lease, Status: []byte(`{}`)}
		}
		if _, err := s.ApplyOutcomes(context.Background(), outs, fast); err != nil {
			t.Fatal(err)
		}
	}
}

func applyOn(t *testing.T, s *store.Store, rev int64, name, config string) {
	t.Helper()
	if _, _, err := s.ApplyResources(context.Background(), "test", []store.ApplyInput{{
		Namespace: "default", Kind: "leaf", KindVersion: 1, Name: name,
		Labels: []byte(`{}`), Spec: []byte(`{}`), KindRevision: rev, ProviderConfig: config,
	}}); err != nil {
		t.Fatal(err)
	}
}

func queuedNames(t *testing.T, s *store.Store) []string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT r.name FROM tasks t JOIN resources r ON r.id = t.resource_id
		WHERE t.trigger = 'specChange' ORDER BY r.name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func drainRequeues(t *testing.T, s *store.Store, limit int) (batches int) {
	t.Helper()
	for {
		res, found, err := s.RequeueForConfigs(context.Background(), limit)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return batches
		}
		batches++
		if batches > 100 {
			t.Fatal("requeue never finished")
		}
		_ = res
	}
}

// TestConfigEditRequeuesWhatItChanges: editing the default re-queues the
// resources whose effective config changed, and only those: a resource
// whose named config overrides the edited key keeps its effective config.
// Editing a named config re-queues its resources alone. The work goes a
// batch at a time.
func TestConfigEditRequeuesWhatItChanges(t *testing.T) {
	s, ctx := newStore(t)
	rev := cfgKind(t, s, "leaf", 1, store.Policy{})
	v := cfgValidator(t, rev, regionSchema)
	cfgApply(t, s, v, "default", `{"region":"eu","size":1}`)
	cfgApply(t, s, v, "us", `{"region":"us"}`)
	applyOn(t, s, rev, "d1", "")
	applyOn(t, s, rev, "d2", "")
	applyOn(t, s, rev, "d3", "default")
	applyOn(t, s, rev, "u1", "us")
	settle(t, s)
	drainRequeues(t, s, 10) // the configs' creation: nothing was settled yet to requeue

	// The region: us overrides it, so u1's effective config is the same.
	cfgApply(t, s, v, "default", `{"region":"ap","size":1}`)
	if n := drainRequeues(t, s, 1); n != 4 {
		t.Errorf("three resources a batch at a time took %d batches, want 4 (the last finds none left)", n)
	}
	if got := queuedNames(t, s); len(got) != 3 || got[0] != "d1" || got[2] != "d3" {
		t.Fatalf("queued after a region edit = %v, want d1 d2 d3", got)
	}
	r := get(t, s, "d1")
	if r.Phase != "Ready" || r.Task == nil || r.Wait != store.WaitWorker {
		t.Fatalf("d1 = phase %s task %+v wait %q; want Ready with a task waiting for a worker", r.Phase, r.Task, r.Wait)
	}
	wantEvent(t, lastEvent(t, s, "d1"), "ConfigChanged", "system", `provider config "default" revision 2`)
	settle(t, s)

	// The size: every resource's effective config changes.
	cfgApply(t, s, v, "default", `{"region":"ap","size":2}`)
	drainRequeues(t, s, 100)
	if got := queuedNames(t, s); len(got) != 4 {
		t.Fatalf("queued after a size edit = %v, want all four", got)
	}
	settle(t, s)

	// A named config's edit re-queues its resources alone; a description
	// edit re-queues nothing.
	cfgApply(t, s, v, "us", `{"region":"us-east"}`)
	drainRequeues(t, s, 100)
	if got := queuedNames(t, s); len(got) != 1 || got[0] != "u1" {
		t.Fatalf("queued after editing us = %v, want u1", got)
	}
	settle(t, s)
	if _, _, err := s.ApplyProviderConfig(ctx, store.ProviderConfig{Kind: "leaf", Version: 1, Name: "us",
		Config: []byte(`{"region":"us-east"}`), Description: "new words"}, v); err != nil {
		t.Fatal(err)
	}
	if n := drainRequeues(t, s, 100); n != 0 {
		t.Errorf("a description edit left %d requeue batches", n)
	}
}
