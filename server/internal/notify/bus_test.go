package notify_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestLocalWakeNeedsNoDatabaseRoundTrip(t *testing.T) {
	db := pgtest.New(t)
	bus := notify.New(db.Pool, "a", 50, quiet())
	ch, stop := bus.Subscribe(notify.Tasks)
	defer stop()
	bus.Publish(notify.Tasks)
	testkit.ReceiveWithin(t, time.Second, ch, "a wake-up by local publish")
	if bus.Sent() != 0 {
		t.Fatalf("sent %d NOTIFYs with no other replica", bus.Sent())
	}
}

func TestWakeCrossesReplicas(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := notify.New(db.Pool, "a", 50, quiet())
	b := notify.New(db.Pool, "b", 50, quiet())
	a.SetPeers(1)
	wakeB, stop := b.Subscribe(notify.Changes)
	defer stop()
	ownA, stopA := a.Subscribe(notify.Changes)
	defer stopA()
	go a.Run(ctx)
	go b.Run(ctx)
	// Each listener wakes its subscribers once when it connects; take that.
	testkit.ReceiveWithin(t, 5*time.Second, wakeB, "a wake-up by listener start of b")
	testkit.ReceiveWithin(t, 5*time.Second, ownA, "a wake-up by listener start of a")

	a.Publish(notify.Changes)
	testkit.ReceiveWithin(t, 5*time.Second, wakeB, "a wake-up by NOTIFY from a")
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

// A replica publishing without pause sends its share of the budget and no
// more: budget/(peers+1) a second after a first burst of one per channel.
func TestNotifyBudgetIsSharedAmongReplicas(t *testing.T) {
	db := pgtest.New(t)
	for _, peers := range []int{1, 3} {
		ctx, cancel := context.WithCancel(context.Background())
		bus := notify.New(db.Pool, "a", 40, quiet())
		bus.SetPeers(peers)
		go bus.Run(ctx)
		const window = 1500 * time.Millisecond
		start := time.Now()
		for time.Since(start) < window {
			bus.Publish(notify.Tasks)
			bus.Publish(notify.Changes)
			time.Sleep(time.Millisecond)
		}
		elapsed := time.Since(start)
		sent := bus.Sent()
		cancel()
		share := 40 / float64(peers+1)
		most := 3 + share*elapsed.Seconds() + 1 // the burst, the share, one in flight
		least := share * window.Seconds() / 2
		if float64(sent) > most || float64(sent) < least {
			t.Errorf("with %d peers: %d notifications in %s, want between %.0f and %.0f (a share of %.0f/s)",
				peers, sent, elapsed.Round(time.Millisecond), least, most, share)
		}
	}
}
