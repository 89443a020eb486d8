package converge

import (
	"math"
	"math/rand/v2"
	"time"
)

// backoff computes reconnect delays: exponential growth of the ceiling from
// min to max, and a uniformly random delay below it ("full jitter").
type backoff struct {
	min, max time.Duration
	attempt  int
	// randN returns a uniform value in [0, n); tests replace it.
	randN func(n int64) int64
}

func newBackoff(minDelay, maxDelay time.Duration) *backoff {
	return &backoff{min: minDelay, max: maxDelay, randN: rand.Int64N}
}

// next returns the delay before the next attempt and counts the attempt.
func (b *backoff) next() time.Duration {
	ceiling := b.min
	for i := 0; i < b.attempt && ceiling < b.max; i++ {
		if ceiling > b.max/2 {
			ceiling = b.max
			break
		}
		ceiling *= 2
	}
	ceiling = min(ceiling, b.max)
	b.attempt++
	n := int64(ceiling)
	if n < math.MaxInt64 {
		n++ // make the ceiling itself reachable
	}
	return time.Duration(b.randN(n))
}

// reset starts the growth over, after a connection that worked.
func (b *backoff) reset() { b.attempt = 0 }
