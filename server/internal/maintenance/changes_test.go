package maintenance

import (
	"errors"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestChangeSamples: the cut is the xid of the newest sample at least the
// retention old; used samples go, younger ones stay for later passes.
func TestChangeSamples(t *testing.T) {
	c := NewChangeTrimmer(time.Minute, time.Hour, nil, quiet)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []struct {
		after time.Duration
		xid   uint64
		cut   uint64
		kept  int
	}{
		{0, 100, 0, 1},                  // nothing is an hour old yet
		{30 * time.Minute, 200, 0, 2},   // still nothing
		{60 * time.Minute, 300, 100, 2}, // the first sample is an hour old
		{61 * time.Minute, 310, 0, 3},   // the used one went; 200 is 31 min old
		{150 * time.Minute, 400, 310, 1},
	}
	for _, s := range steps {
		if cut := c.sample(t0.Add(s.after), s.xid); cut != s.cut || len(c.samples) != s.kept {
			t.Fatalf("at +%s: cut %d with %d samples kept, want %d with %d", s.after, cut, len(c.samples), s.cut, s.kept)
		}
	}
}

// TestChangeTrimmer: changes older than the retention are pruned, and a
// cursor from before them no longer resumes.
func TestChangeTrimmer(t *testing.T) {
	e := newEnv(t)
	start, err := e.st.CurrentCursor(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.apply("leaf", e.rev, "old", `{}`)
	if got, _, err := e.st.ReadChanges(e.ctx, start, store.ChangeFilter{}, 10); err != nil || len(got) != 1 {
		t.Fatalf("changes before trimming: %v, %v; want old's creation", got, err)
	}
	e.run(NewChangeTrimmer(tick, 200*time.Millisecond, e.st, quiet))

	testkit.Eventually(t, "the old change to be pruned", func() bool {
		return errors.Is(e.st.CheckCursor(e.ctx, start), store.ErrCursorExpired)
	})
	if got, _, err := e.st.ReadChanges(e.ctx, start, store.ChangeFilter{}, 10); err != nil || len(got) != 0 {
		t.Fatalf("changes after trimming: %v, %v; want none", got, err)
	}
}
