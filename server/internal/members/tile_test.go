package members

import (
	"testing"

	"github.com/convergehq/converge/server/internal/store"
)

func serving(id string, workers int) store.Member {
	return store.Member{ID: id, Served: []store.Served{{Kind: "leaf", Version: 1, Reaction: "reconcile", Workers: workers}}}
}

// TestTile: the replicas serving a kind version split the shards into
// disjoint ranges that cover them all, the same from every replica's view;
// a join or a departure re-tiles; replicas without workers for it, and a
// replica missing from its own view, are handled.
func TestTile(t *testing.T) {
	live := []store.Member{serving("c", 1), serving("a", 2), serving("b", 1), serving("idle", 0), {ID: "control"}}
	covered := make([]int, store.Shards)
	for _, id := range []string{"a", "b", "c"} {
		lo, hi := tile(live, id, "leaf", 1)
		if lo >= hi {
			t.Fatalf("%s: empty tile [%d, %d)", id, lo, hi)
		}
		for s := lo; s < hi; s++ {
			covered[s]++
		}
	}
	for s, n := range covered {
		if n != 1 {
			t.Fatalf("shard %d is in %d tiles, want 1", s, n)
		}
	}
	if lo, hi := tile(live, "a", "leaf", 1); lo != 0 || hi != 85 {
		t.Fatalf("a's tile = [%d, %d), want [0, 85) (first by id)", lo, hi)
	}
	// b leaves: a and c split the shards in two.
	if lo, hi := tile([]store.Member{serving("a", 1), serving("c", 1)}, "c", "leaf", 1); lo != 128 || hi != store.Shards {
		t.Fatalf("after b left, c's tile = [%d, %d), want [128, 256)", lo, hi)
	}
	// Without workers for the kind, or not yet in its own view: every shard.
	for _, id := range []string{"idle", "newcomer"} {
		if lo, hi := tile(live, id, "leaf", 1); lo != 0 || hi != store.Shards {
			t.Fatalf("%s: tile [%d, %d), want every shard", id, lo, hi)
		}
	}
	if lo, hi := tile(live, "a", "other", 1); lo != 0 || hi != store.Shards {
		t.Fatalf("a kind nobody serves: tile [%d, %d), want every shard", lo, hi)
	}
}
