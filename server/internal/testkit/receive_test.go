package testkit

import (
	"testing"
	"time"
)

func TestReceiveFailsAtItsDeadline(t *testing.T) {
	clock := useFakeClock(t)
	start := clock.at
	never := make(chan int)
	msg := run(func(tb testing.TB) { Receive(tb, never, "a Watch stream to register") })
	if want := "timed out after 10s waiting for a Watch stream to register"; msg != want {
		t.Fatalf("failure = %q, want %q", msg, want)
	}
	if waited := clock.at.Sub(start); waited != Deadline {
		t.Errorf("waited %s, want %s", waited, Deadline)
	}
	msg = run(func(tb testing.TB) { ReceiveWithin(tb, 300*time.Millisecond, never, "a wake-up") })
	if want := "timed out after 300ms waiting for a wake-up"; msg != want {
		t.Fatalf("failure = %q, want %q", msg, want)
	}
}

// TestReceiveReturnsWhatCame runs on the real clock.
func TestReceiveReturnsWhatCame(t *testing.T) {
	ch := make(chan string, 1)
	ch <- "hello"
	var got string
	if msg := run(func(tb testing.TB) { got = Receive(tb, ch, "a greeting") }); msg != "" || got != "hello" {
		t.Fatalf("Receive = %q, failure %q; want hello and none", got, msg)
	}
	done := make(chan struct{})
	close(done)
	if msg := run(func(tb testing.TB) { Receive(tb, done, "done") }); msg != "" {
		t.Fatalf("a closed channel: failure %q, want none", msg)
	}
}
