package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/convergehq/converge/server/internal/store"
)

// childDrift lists where the kept child counts differ from a recount.
func childDrift(t *testing.T, s *store.Store) []string {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT owner_id, phase, kept, counted FROM converge_child_counts_drift() ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, kept, counted int64
		var phase string
		if err := rows.Scan(&id, &phase, &kept, &counted); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s kept %d counted %d", id, phase, kept, counted))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func noDrift(t *testing.T, s *store.Store, when string) {
	t.Helper()
	if d := childDrift(t, s); len(d) != 0 {
		t.Fatalf("%s: the kept child counts differ from a recount: %v", when, d)
	}
}

// rollupOf is the composite's stored rollup counts.
func rollupOf(t *testing.T, s *store.Store, name string) store.RollupCounts {
	t.Helper()
	var raw []byte
	if err := s.Pool().QueryRow(context.Background(), `SELECT coalesce(rollup, '{}') FROM resources WHERE kind = 'stack' AND name = $1`, name).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var c store.RollupCounts
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChildCountsKeptByTheTriggers: the counts a rollup reads are kept as
// children are created, change phase and go, agree with a recount after
// every step, and a repair restores counts written past the triggers.
func TestChildCountsKeptByTheTriggers(t *testing.T) {
	s, ctx := newStore(t)
	stackRev := applyKind(t, s, "stack", store.Policy{})
	partRev := applyKind(t, s, "part", store.Policy{})
	histApply(t, s, "alice", "stack", 1, stackRev, "s", `{}`)

	composeAs(t, s, partRev, "s-a", "s-b", "s-c")
	noDrift(t, s, "after the compose")
	runRollups(t, s)
	if c := rollupOf(t, s, "s"); c.Total != 3 || c.Reconciling != 3 || c.Ready != 0 {
		t.Fatalf("rollup after the compose = %+v, want 3 reconciling", c)
	}
	settleParts(t, s)
	noDrift(t, s, "after the parts settled")
	if c := rollupOf(t, s, "s"); c.Total != 3 || c.Ready != 3 {
		t.Fatalf("rollup after the parts settled = %+v, want 3 ready", c)
	}

	// A child deleted by hand (not through its composite) leaves the counts.
	if _, err := s.Pool().Exec(ctx, `DELETE FROM resources WHERE name = 's-c'`); err != nil {
		t.Fatal(err)
	}
	noDrift(t, s, "after a child was deleted")
	runRollups(t, s)
	if c := rollupOf(t, s, "s"); c.Total != 2 || c.Ready != 2 {
		t.Fatalf("rollup after a child was deleted = %+v, want 2 ready", c)
	}

	// Counts written past the triggers show as drift, and the repair
	// recounts them.
	if _, err := s.Pool().Exec(ctx, `UPDATE child_counts SET n = n + 5 WHERE phase = 'Ready'`); err != nil {
		t.Fatal(err)
	}
	if d := childDrift(t, s); len(d) != 1 {
		t.Fatalf("drift after a count was changed by hand = %v, want one row", d)
	}
	if _, err := s.Pool().Exec(ctx, `SELECT converge_child_counts_repair()`); err != nil {
		t.Fatal(err)
	}
	noDrift(t, s, "after the repair")

	// A composite gone takes its counts with it; the children it leaves
	// behind (a kept child outlives its composite) write none for it.
	var owner int64
	if err := s.Pool().QueryRow(ctx, `DELETE FROM resources WHERE kind = 'stack' AND name = 's' RETURNING id`).Scan(&owner); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE resources SET generation = generation + 1 WHERE owner_id = $1`, owner); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM child_counts WHERE owner_id = $1) +
		(SELECT count(*) FROM child_count_deltas WHERE owner_id = $1)`, owner).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d count rows left for a composite that is gone", left)
	}
	noDrift(t, s, "after the composite was deleted")
}
