package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// TestClaimTakesItsTileFirst: a replica's claim takes tasks of its tile of
// the shards before any other, whatever their age, and takes tasks of other
// tiles only for what its tile cannot fill.
func TestClaimTakesItsTileFirst(t *testing.T) {
	db := pgtest.New(t)
	s, ctx := store.New(db.Pool, db.Pool), context.Background()
	rev := applyKind(t, s, "leaf", store.Policy{})
	for i := range 60 {
		apply(t, s, rev, fmt.Sprintf("r%02d", i), `{}`)
	}
	const lo, hi = 0, 128
	var inTile int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE shard >= $1 AND shard < $2`, lo, hi).Scan(&inTile); err != nil {
		t.Fatal(err)
	}
	if inTile == 0 || inTile == 60 {
		t.Fatalf("%d of 60 tasks on shards [%d, %d): the test needs some on both sides", inTile, lo, hi)
	}
	shardOf := func(c store.Claimed) int16 {
		var sh int16
		if err := db.Pool.QueryRow(ctx, `SELECT shard FROM tasks WHERE id = $1`, c.TaskID).Scan(&sh); err != nil {
			t.Fatal(err)
		}
		return sh
	}
	want := func(n int) []store.Want {
		return []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: n, ShardLo: lo, ShardHi: hi}}
	}
	// Fewer than the tile holds: all from the tile.
	got, err := s.Claim(ctx, "m1", time.Minute, want(inTile-1))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != inTile-1 {
		t.Fatalf("claimed %d, want %d", len(got), inTile-1)
	}
	for _, c := range got {
		if sh := shardOf(c); sh < lo || sh >= hi {
			t.Fatalf("claimed a task of shard %d before its tile [%d, %d) was empty", sh, lo, hi)
		}
	}
	// More than the tile has left: its last task, then the others'.
	got, err = s.Claim(ctx, "m1", time.Minute, want(100))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 60-(inTile-1) {
		t.Fatalf("claimed %d, want the %d left", len(got), 60-(inTile-1))
	}
	own := 0
	for _, c := range got {
		if sh := shardOf(c); sh >= lo && sh < hi {
			own++
		}
	}
	if own != 1 {
		t.Fatalf("%d tasks of the tile in the second claim, want 1", own)
	}
}
