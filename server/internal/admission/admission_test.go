package admission

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
)

// fakeQueue is a backlog per kind with a clock the test moves.
type fakeQueue struct {
	mu     sync.Mutex
	queued map[string]int64
	reads  int
}

func (q *fakeQueue) count(_ context.Context, kind string, limit int64) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reads++
	return min(q.queued[kind], limit), nil
}

// admit admits adds through g, the write then committed.
func admit(g *Gate, ctx context.Context, adds map[string]int) error {
	done, err := g.Admit(ctx, adds)
	if err == nil {
		done(true)
	}
	return err
}

func newGate(bound int64) (*Gate, *fakeQueue, *time.Time) {
	q := &fakeQueue{queued: map[string]int64{}}
	g := New(bound, 0, q.count)
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	return g, q, &now
}

func TestAdmitsUnderTheBoundAndCountsWhatItAdmitted(t *testing.T) {
	g, q, now := newGate(10)
	ctx := context.Background()
	if err := admit(g, ctx, map[string]int{"a": 25}); err != nil {
		t.Fatalf("a batch larger than the bound on an empty backlog: %v", err)
	}
	// Within one refresh the reading is reused with the 25 admitted added.
	err := admit(g, ctx, map[string]int{"a": 1})
	if wait, ok := client.RetryAfter(err); !ok || wait != time.Second {
		t.Fatalf("over the bound before the backlog was read again: %v (hint %s), want a refusal with a 1 s hint (no rate yet)", err, wait)
	}
	if err := admit(g, ctx, map[string]int{"b": 1}); err != nil {
		t.Fatalf("another kind: %v", err)
	}
	if q.reads != 2 {
		t.Errorf("%d backlog readings, want one per kind within a refresh", q.reads)
	}
	// Later: the queue holds 12 and drains 3 per 100 ms from then on.
	q.queued["a"] = 12
	*now = now.Add(200 * time.Millisecond)
	if err := admit(g, ctx, map[string]int{"a": 1}); err == nil {
		t.Fatal("12 queued, bound 10: admitted")
	}
	q.queued["a"] = 9
	*now = now.Add(100 * time.Millisecond)
	if err := admit(g, ctx, map[string]int{"a": 1}); err != nil {
		t.Fatalf("9 queued, bound 10: %v", err)
	}
}

func TestHintFollowsTheDrainRate(t *testing.T) {
	g, q, now := newGate(100)
	ctx := context.Background()
	q.queued["a"] = 150
	_ = admit(g, ctx, map[string]int{"a": 1})
	q.queued["a"] = 140 // 10 drained in 100 ms: 100/s
	*now = now.Add(100 * time.Millisecond)
	err := admit(g, ctx, map[string]int{"a": 1})
	wait, ok := client.RetryAfter(err)
	// 140 queued, to drain to 75 at 100/s: 0.65 s.
	if !ok || wait != 650*time.Millisecond {
		t.Fatalf("hint = %s (%v), want 650ms", wait, err)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Meta().Get("Retry-After") != "1" {
		t.Errorf("Retry-After = %q, want 1", ce.Meta().Get("Retry-After"))
	}
}

func TestHintBounds(t *testing.T) {
	for _, c := range []struct {
		queued, bound int64
		rate          float64
		want          time.Duration
	}{
		{100, 100, 0, time.Second},
		{100, 100, 1e9, 50 * time.Millisecond},
		{1e6, 100, 1, 10 * time.Second},
		{200, 100, 250, 500 * time.Millisecond},
	} {
		if got := Hint(c.queued, c.bound, c.rate, 10*time.Second); got != c.want {
			t.Errorf("Hint(%d, %d, %g) = %s, want %s", c.queued, c.bound, c.rate, got, c.want)
		}
	}
}

func TestNoBoundAdmitsEverything(t *testing.T) {
	var g *Gate
	if err := admit(g, context.Background(), map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	g2, q, _ := newGate(0)
	q.queued["a"] = 1e9
	if err := admit(g2, context.Background(), map[string]int{"a": 1}); err != nil || q.reads != 0 {
		t.Fatalf("bound 0: %v after %d readings", err, q.reads)
	}
}

func TestAFailedReadingAdmits(t *testing.T) {
	g := New(1, time.Second, func(context.Context, string, int64) (int64, error) { return 0, errors.New("down") })
	if err := admit(g, context.Background(), map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
}

// TestTheBoundFollowsTheDrainRate: with a queue-wait target, a kind is
// admitted up to what it drains in that time, within the floor and the
// ceiling.
func TestTheBoundFollowsTheDrainRate(t *testing.T) {
	q := &fakeQueue{queued: map[string]int64{}}
	g := New(100_000, time.Second, q.count)
	now := time.Unix(1000, 0)
	g.now = func() time.Time { return now }
	ctx := context.Background()
	q.queued["a"] = 5_000
	if err := admit(g, ctx, map[string]int{"a": 1}); err != nil {
		t.Fatalf("rate unknown, under the ceiling: %v", err)
	}
	q.queued["a"] = 4_801 // 200 drained (the one admitted too) in 100 ms: 2,000/s
	now = now.Add(100 * time.Millisecond)
	err := admit(g, ctx, map[string]int{"a": 1})
	if _, ok := client.RetryAfter(err); !ok {
		t.Fatalf("4,801 queued draining at 2,000/s, wait target 1 s: %v, want a refusal", err)
	}
	var ce *connect.Error
	if errors.As(err, &ce) && !strings.Contains(ce.Message(), "--max-queue-wait 1s") {
		t.Errorf("the refusal %q does not name the wait target", ce.Message())
	}
	if got := g.limit(2_000); got != 2_000 {
		t.Errorf("limit at 2,000/s = %d, want 2,000", got)
	}
	if got := g.limit(10); got != Floor {
		t.Errorf("limit at 10/s = %d, want the floor %d", got, Floor)
	}
	if got := g.limit(1e9); got != 100_000 {
		t.Errorf("limit at 1e9/s = %d, want the ceiling", got)
	}
}

// TestAWriteThatFailedDoesNotCount: an admitted write counts toward the
// backlog while it runs, and not once it failed.
func TestAWriteThatFailedDoesNotCount(t *testing.T) {
	g, _, _ := newGate(10)
	ctx := context.Background()
	done, err := g.Admit(ctx, map[string]int{"a": 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := admit(g, ctx, map[string]int{"a": 1}); err == nil {
		t.Fatal("admitted with 10 being written under a bound of 10")
	}
	done(false)
	if err := admit(g, ctx, map[string]int{"a": 1}); err != nil {
		t.Fatalf("the 10 failed to write, yet: %v", err)
	}
}

// TestHintIsCappedByTheWaitTarget: a drain rate misread low costs a poll
// at twice the wait target, not an idle queue for seconds.
func TestHintIsCappedByTheWaitTarget(t *testing.T) {
	g := New(100_000, 500*time.Millisecond, nil)
	if got := Hint(9_000, Floor, 5, g.maxHint()); got != time.Second {
		t.Fatalf("hint at 5/s with 9,000 queued = %s, want the 1 s cap", got)
	}
}
