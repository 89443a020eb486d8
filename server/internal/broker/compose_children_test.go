package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestCheckChildrenReportsTheFirstProblemInOrder: children are checked in
// parallel slices, yet a problem is reported for the first child that has
// one, as when they are read in order, and a valid answer keeps its order.
func TestCheckChildrenReportsTheFirstProblemInOrder(t *testing.T) {
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	testkit.ApplyKind(t, st, &convergev1.KindManifest{
		Kind: "part", KindVersion: 1,
		SpecSchema: testkit.Schema(t, map[string]any{"type": "object",
			"properties": map[string]any{"size": map[string]any{"type": "integer"}}}),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := notify.New(db.Pool, "b1", 1000, quiet)
	reg := kinds.New(st, bus, quiet)
	if err := reg.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	b := New(Config{MemberID: "b1"}, st, reg, bus, quiet)

	const n = 5 * childrenPerWorker
	children := func(edit func(i int, ch *convergev1.Child)) []*convergev1.Child {
		out := make([]*convergev1.Child, n)
		for i := range out {
			out[i] = &convergev1.Child{Kind: "part", KindVersion: 1, Name: fmt.Sprintf("p-%05d", i), Spec: []byte(`{"size":1}`)}
			if edit != nil {
				edit(i, out[i])
			}
		}
		return out
	}
	specs, index, msg := b.checkChildren(children(nil))
	if msg != "" || len(specs) != n || specs[n-1].Name != fmt.Sprintf("p-%05d", n-1) || index[[2]string{"part", "p-00007"}] != 7 {
		t.Fatalf("a valid answer: %d children, last %q, index of p-00007 %d, problem %q", len(specs), specs[n-1].Name, index[[2]string{"part", "p-00007"}], msg)
	}
	for _, c := range []struct {
		name string
		edit func(i int, ch *convergev1.Child)
		want string
	}{
		{"two bad specs in different slices", func(i int, ch *convergev1.Child) {
			if i == 100 || i == n-10 {
				ch.Spec = []byte(`{"size":"big"}`)
			}
		}, "children[100] part/p-00100: spec does not match the spec_schema of part v1"},
		{"a kind not registered after a bad spec", func(i int, ch *convergev1.Child) {
			if i == 3*childrenPerWorker {
				ch.Spec = []byte(`[1]`)
			}
			if i == n-1 {
				ch.KindVersion = 9
			}
		}, fmt.Sprintf("children[%d] part/p-%05d: spec must be a JSON object", 3*childrenPerWorker, 3*childrenPerWorker)},
		{"a duplicate after a bad spec", func(i int, ch *convergev1.Child) {
			if i == 2500 {
				ch.Spec = []byte(`{"size":`)
			}
			if i == 3000 {
				ch.Name = "p-00010"
			}
		}, "children[2500] part/p-02500: spec: "},
		{"a duplicate", func(i int, ch *convergev1.Child) {
			if i == 3000 {
				ch.Name = "p-00010"
			}
		}, "children[3000] part/p-00010: the same child is also children[10]"},
		{"a kind not registered", func(i int, ch *convergev1.Child) {
			if i == n-1 {
				ch.Kind = "nope"
			}
		}, fmt.Sprintf("children[%d] nope/p-%05d: kind nope v1 is not registered", n-1, n-1)},
	} {
		if _, _, msg := b.checkChildren(children(c.edit)); !strings.HasPrefix(msg, c.want) {
			t.Errorf("%s: problem %q, want it to begin %q", c.name, msg, c.want)
		}
	}
}
