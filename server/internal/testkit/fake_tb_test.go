package testkit

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// fakeTB records how a helper failed a test. Its Fatal ends the calling
// goroutine as the real one does, so run calls helpers on one of its own.
type fakeTB struct {
	testing.TB // nil: a helper calling anything else panics the test
	fatal      string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fakeTB) Fatal(args ...any) {
	f.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls helper with a fake TB and returns the message it failed
// with, "" if it did not.
func run(helper func(testing.TB)) string {
	f := &fakeTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		helper(f)
	}()
	<-done
	return f.fatal
}

// fakeClock stands in for the waits' clock: sleeping moves it on at
// once, so a wait reaches a deadline of seconds in microseconds, and a
// timer fires at once, having moved the clock to its end.
type fakeClock struct{ at time.Time }

func (c *fakeClock) now() time.Time        { return c.at }
func (c *fakeClock) sleep(d time.Duration) { c.at = c.at.Add(d) }

func (c *fakeClock) after(d time.Duration) <-chan time.Time {
	c.at = c.at.Add(d)
	fired := make(chan time.Time, 1)
	fired <- c.at
	return fired
}

// useFakeClock puts a fake clock under every wait until the test ends;
// tests using it must not run in parallel.
func useFakeClock(t *testing.T) *fakeClock {
	c := &fakeClock{at: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	now, sleep, after = c.now, c.sleep, c.after
	t.Cleanup(func() { now, sleep, after = time.Now, time.Sleep, time.After })
	return c
}
