package converge

import (
	"math"
	"testing"
	"time"
)

func TestBackoffGrowsToMaxWithFullJitter(t *testing.T) {
	b := newBackoff(100*time.Millisecond, time.Second)
	var bounds []int64
	b.randN = func(n int64) int64 {
		bounds = append(bounds, n)
		return n - 1 // the ceiling itself
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := b.next(); got != w*time.Millisecond {
			t.Fatalf("delay %d = %s; want %s", i, got, w*time.Millisecond)
		}
	}
	if bounds[0] != int64(100*time.Millisecond)+1 {
		t.Errorf("first delay drawn from [0, %d); want [0, 100ms]", bounds[0])
	}
	b.reset()
	if got := b.next(); got != 100*time.Millisecond {
		t.Fatalf("delay after reset = %s; want 100ms", got)
	}

	b.randN = func(int64) int64 { return 0 }
	if got := b.next(); got != 0 {
		t.Fatalf("delay with the lowest draw = %s; want 0 (full jitter)", got)
	}
}

func TestBackoffSurvivesExtremeBounds(t *testing.T) {
	b := newBackoff(time.Duration(math.MaxInt64/4), time.Duration(math.MaxInt64))
	for range 100 {
		if d := b.next(); d < 0 {
			t.Fatalf("negative delay %s", d)
		}
	}
}
