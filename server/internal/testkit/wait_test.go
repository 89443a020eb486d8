package testkit

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEventuallyFailsAtItsDeadline(t *testing.T) {
	clock := useFakeClock(t)
	start := clock.at
	looks := 0
	msg := run(func(tb testing.TB) {
		Eventually(tb, "the thing", func() bool { looks++; return false })
	})
	if want := "timed out after 10s waiting for the thing"; msg != want {
		t.Fatalf("failure = %q, want %q", msg, want)
	}
	// It gave up at the deadline, not before and not long after.
	if waited := clock.at.Sub(start); waited < Deadline || waited > Deadline+pollEvery {
		t.Errorf("gave up after %s, want %s", waited, Deadline)
	}
	if want := int(Deadline/pollEvery) + 1; looks < want {
		t.Errorf("looked %d times in %s, want at least %d", looks, Deadline, want)
	}
}

func TestEventuallyWithinKeepsItsOwnDeadline(t *testing.T) {
	clock := useFakeClock(t)
	start := clock.at
	msg := run(func(tb testing.TB) {
		EventuallyWithin(tb, 20*time.Second, "the server to restart", func() bool { return false })
	})
	if want := "timed out after 20s waiting for the server to restart"; msg != want {
		t.Fatalf("failure = %q, want %q", msg, want)
	}
	if waited := clock.at.Sub(start); waited < 20*time.Second {
		t.Errorf("gave up after %s, want 20s", waited)
	}
}

// TestEventuallyEndsWhenItHolds runs on the real clock: a condition that
// holds ends the wait at once, without failing.
func TestEventuallyEndsWhenItHolds(t *testing.T) {
	looks := 0
	msg := run(func(tb testing.TB) {
		Eventually(tb, "the third look", func() bool { looks++; return looks == 3 })
	})
	if msg != "" || looks != 3 {
		t.Fatalf("failure %q after %d looks, want none after 3", msg, looks)
	}
}

func TestPollNamesTheLastValue(t *testing.T) {
	useFakeClock(t)
	n := 0
	msg := run(func(tb testing.TB) {
		Poll(tb, "five deliveries", func() int { n++; return n }, func(int) bool { return false })
	})
	if !strings.HasPrefix(msg, "timed out after 10s waiting for five deliveries; last seen: ") ||
		!strings.HasSuffix(msg, ": "+strconv.Itoa(n)) {
		t.Fatalf("failure = %q, want it to name the deadline, what and the last value %d", msg, n)
	}
}

func TestPollQuotesText(t *testing.T) {
	useFakeClock(t)
	msg := run(func(tb testing.TB) {
		PollWithin(tb, time.Second, "a line", func() string { return "" }, func(s string) bool { return s != "" })
	})
	if want := `timed out after 1s waiting for a line; last seen: ""`; msg != want {
		t.Fatalf("failure = %q, want %q", msg, want)
	}
}

func TestPollNamesStructFields(t *testing.T) {
	useFakeClock(t)
	type cursor struct{ XID, Seq int }
	msg := run(func(tb testing.TB) {
		Poll(tb, "the cursor", func() cursor { return cursor{7, 2} }, func(cursor) bool { return false })
	})
	if want := "timed out after 10s waiting for the cursor; last seen: {XID:7 Seq:2}"; msg != want {
		t.Fatalf("failure = %q, want %q", msg, want)
	}
}

func TestPollReturnsTheAcceptedValue(t *testing.T) {
	n := 0
	var got int
	msg := run(func(tb testing.TB) {
		got = Poll(tb, "two", func() int { n++; return n }, func(v int) bool { return v == 2 })
	})
	if msg != "" || got != 2 {
		t.Fatalf("Poll = %d, failure %q; want 2 and none", got, msg)
	}
}

// TestAConditionMayFailTheTest: a condition runs on the test's goroutine,
// so its own Fatal ends the wait there and then.
func TestAConditionMayFailTheTest(t *testing.T) {
	useFakeClock(t)
	looks := 0
	msg := run(func(tb testing.TB) {
		Eventually(tb, "never", func() bool {
			looks++
			if looks == 2 {
				tb.Fatal("the server went away")
			}
			return false
		})
	})
	if msg != "the server went away" || looks != 2 {
		t.Fatalf("failure %q after %d looks, want the condition's own after 2", msg, looks)
	}
}
