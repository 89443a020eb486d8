package notify_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func within(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: no wake-up within %s", what, d)
	}
}

func TestLocalWakeNeedsNoDatabaseRoundTrip(t *testing.T) {
	db := pgtest.New(t)
	bus := notify.New(db.Pool, "a", 10*time.Millisecond, quiet())
	ch, stop := bus.Subscribe(notify.Tasks)
	defer stop()
	bus.Publish(notify.Tasks)
	within(t, ch, time.Second, "local publish")
	if bus.Sent() != 0 {
		t.Fatalf("sent %d NOTIFYs with no other replica", bus.Sent())
	}
}

func TestWakeCrossesReplicasAndIsRateLimited(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := notify.New(db.Pool, "a", 50*time.Millisecond, quiet())
	b := notify.New(db.Pool, "b", 50*time.Millisecond, quiet())
	a.SetRemote(true)
	wakeB, stop := b.Subscribe(notify.Changes)
	defer stop()
	ownA, stopA := a.Subscribe(notify.Changes)
	defer stopA()
	go a.Run(ctx)
	go b.Run(ctx)
	// Each listener wakes its subscribers once when it connects; take that.
	within(t, wakeB, 5*time.Second, "listener start of b")
	within(t, ownA, 5*time.Second, "listener start of a")

	for i := 0; i < 100; i++ {
		a.Publish(notify.Changes)
	}
	within(t, wakeB, 5*time.Second, "NOTIFY from a")
	// A burst of 100 publishes within one interval costs at most two
	// NOTIFYs (the first, and one trailing).
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && a.Sent() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := a.Sent(); n < 1 || n > 2 {
		t.Fatalf("100 publishes sent %d NOTIFYs, want 1 or 2", n)
	}
	// a ignores its own NOTIFY: after its local wake, none arrives.
	select {
	case <-ownA:
	default:
	}
	select {
	case <-ownA:
		t.Fatal("a woke from its own NOTIFY")
	case <-time.After(300 * time.Millisecond):
	}
	// Only notifications from other replicas count as received.
	if got, sent := b.Received(), a.Sent(); got < 1 || got > sent {
		t.Fatalf("b received %d notifications, a sent %d", got, sent)
	}
	if got := a.Received(); got != 0 {
		t.Fatalf("a received %d notifications, want 0 (its own do not count)", got)
	}
}
