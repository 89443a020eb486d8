package testkit

import (
	"fmt"
	"testing"
	"time"
)

// Deadline bounds every wait in this package that is not given one.
const Deadline = 10 * time.Second

// pollEvery is how long a wait sleeps between two looks. It is short:
// what is waited for is local, and a wait should end soon after it holds.
const pollEvery = 10 * time.Millisecond

// now, sleep and after are the clock of every wait; the kit's own tests
// replace them to run a wait past its deadline without waiting it out.
var (
	now   = time.Now
	sleep = time.Sleep
	after = time.After
)

// Eventually polls ok until it holds, failing the test after Deadline
// with a message naming what it waited for.
func Eventually(t testing.TB, what string, ok func() bool) {
	t.Helper()
	EventuallyWithin(t, Deadline, what, ok)
}

// EventuallyWithin is Eventually with a deadline of its own, for waits
// known to take longer (a database restart) or that must be quick.
func EventuallyWithin(t testing.TB, within time.Duration, what string, ok func() bool) {
	t.Helper()
	if !wait(within, ok) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}

// Poll calls get until ok accepts what it returned, and returns that.
// After Deadline it fails the test naming what it waited for and the
// last value seen, which is what tells a timeout's reader why.
func Poll[T any](t testing.TB, what string, get func() T, ok func(T) bool) T {
	t.Helper()
	return PollWithin(t, Deadline, what, get, ok)
}

// PollWithin is Poll with a deadline of its own.
func PollWithin[T any](t testing.TB, within time.Duration, what string, get func() T, ok func(T) bool) T {
	t.Helper()
	var last T
	if !wait(within, func() bool { last = get(); return ok(last) }) {
		t.Fatalf("timed out after %s waiting for %s; last seen: %s", within, what, show(last))
	}
	return last
}

// show renders a value seen last: text quoted, so that an empty or
// multi-line output reads unambiguously, and structs with field names.
func show(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%+v", v)
}

// wait runs done until it holds, and reports whether it did before
// within passed. done may fail the test itself: it runs on the test's
// goroutine.
func wait(within time.Duration, done func() bool) bool {
	deadline := now().Add(within)
	for !done() {
		if now().After(deadline) {
			return false
		}
		sleep(pollEvery)
	}
	return true
}

// Receive waits for a value on ch and returns it, failing the test after
// Deadline with a message naming what it waited for. A closed channel
// counts as an event (a closed done channel is one), and yields the zero
// value.
func Receive[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	return ReceiveWithin(t, Deadline, ch, what)
}

// ReceiveWithin is Receive with a deadline of its own, for an event that
// must come quickly (a wake-up that needs no round trip) or may be slow.
func ReceiveWithin[T any](t testing.TB, within time.Duration, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-after(within):
		t.Fatalf("timed out after %s waiting for %s", within, what)
		var zero T
		return zero
	}
}
