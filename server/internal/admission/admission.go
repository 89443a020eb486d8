// Package admission bounds how much reconcile work the API lets queue up
// per kind. A write to a kind whose backlog (reconciles waiting for a
// worker) has reached its bound is refused with ResourceExhausted and a
// hint of when to retry, so a burst waits at the client instead of in the
// queue. The bound is the work a kind drains in the queue-wait target at
// the rate it drains now (so an accepted write is reconciled in about
// that long, on a fast machine or a slow one), never more than a fixed
// ceiling, and never less than a floor that keeps a slow kind writable.
package admission

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
)

// Defaults: the ceiling is a second or two of reconciles at the rates
// docs/benchmarks.md records; the wait target leaves room under a 2 s
// submit-to-Ready budget; the floor is one full batch (limits.MaxBatch).
const (
	DefaultBound   = 10_000
	DefaultMaxWait = 500 * time.Millisecond
	Floor          = 1_000
)

// Counter reads a kind's backlog, counting at most limit tasks.
type Counter func(ctx context.Context, kind string, limit int64) (int64, error)

// Gate decides admission. Backlogs are read at most once per refresh per
// kind; writes admitted and not yet counted are added to the reading, so
// concurrent writers on one replica cannot overshoot the bound together.
type Gate struct {
	bound   int64
	maxWait time.Duration
	refresh time.Duration
	count   Counter
	now     func() time.Time
	// OnRefuse, when set, is told of each refusal (for metrics).
	OnRefuse func(kind string)

	mu    sync.Mutex
	kinds map[string]*backlog
}

type backlog struct {
	read   sync.Mutex // one reading per kind at a time
	at     time.Time  // when queued was read
	queued int64      // the reading
	// writing is admitted and not yet committed; committed is committed
	// since the reading (the next reading counts it).
	writing, committed int64
	// rate is the backlog's drain per second, smoothed over readings; 0
	// until two readings tell.
	rate float64
}

// New returns a gate with the ceiling per kind (0 admits everything) and
// the queue-wait target (0: the ceiling alone bounds the backlog).
func New(bound int64, maxWait time.Duration, count Counter) *Gate {
	return &Gate{bound: bound, maxWait: maxWait, refresh: 100 * time.Millisecond, count: count, now: time.Now, kinds: map[string]*backlog{}}
}

// limit is a kind's bound at the rate its backlog drains.
func (g *Gate) limit(rate float64) int64 {
	if g.maxWait <= 0 || rate <= 0 {
		return g.bound
	}
	return min(g.bound, max(Floor, int64(rate*g.maxWait.Seconds())))
}

// Admit admits writes adding n reconciles to each kind in adds, or
// refuses them all with a ResourceExhausted error naming the first kind
// over its bound. A batch is admitted while the backlog is under the
// bound, even when the batch alone is larger, so no batch waits for ever.
// A failed reading admits: admission protects latency, and a database
// that cannot be read will refuse the write itself. The caller reports
// the admitted write's end with done (committed or not), so the drain
// rate is told from what reached the queue.
func (g *Gate) Admit(ctx context.Context, adds map[string]int) (done func(committed bool), err error) {
	if g == nil || g.bound <= 0 {
		return func(bool) {}, nil
	}
	for kind := range adds {
		b := g.backlogOf(kind)
		queued, rate := g.read(ctx, kind, b)
		if limit := g.limit(rate); queued >= limit {
			if g.OnRefuse != nil {
				g.OnRefuse(kind)
			}
			return nil, g.refusal(kind, queued, limit, rate)
		}
	}
	g.mu.Lock()
	for kind, n := range adds {
		g.kinds[kind].writing += int64(n)
	}
	g.mu.Unlock()
	return func(committed bool) {
		g.mu.Lock()
		defer g.mu.Unlock()
		for kind, n := range adds {
			b := g.kinds[kind]
			b.writing -= int64(n)
			if committed {
				b.committed += int64(n)
			}
		}
	}, nil
}

func (g *Gate) backlogOf(kind string) *backlog {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.kinds[kind]
	if b == nil {
		b = &backlog{}
		g.kinds[kind] = b
	}
	return b
}

// read returns the kind's backlog as last read plus what was admitted
// since, reading it again when the reading is older than the refresh.
func (g *Gate) read(ctx context.Context, kind string, b *backlog) (int64, float64) {
	b.read.Lock()
	defer b.read.Unlock()
	now := g.now()
	g.mu.Lock()
	stale := b.at.IsZero() || now.Sub(b.at) >= g.refresh
	queued, committed, at := b.queued, b.committed, b.at
	if !stale {
		defer g.mu.Unlock()
		return queued + committed + b.writing, b.rate
	}
	g.mu.Unlock()
	// Counted up to twice the bound: enough to tell the drain rate near
	// the bound, and the scan stays short however deep the queue is.
	n, err := g.count(ctx, kind, 2*g.bound+1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		return queued + b.committed + b.writing, b.rate
	}
	if !at.IsZero() && queued > 0 && n <= 2*g.bound {
		// Drained = what was there + what came in - what is left, over the
		// interval; an empty queue says nothing of how fast it drains.
		if dt := now.Sub(at).Seconds(); dt > 0 {
			drained := math.Max(0, float64(queued+committed-n)/dt)
			if b.rate == 0 {
				b.rate = drained
			} else {
				b.rate = 0.7*b.rate + 0.3*drained
			}
		}
	}
	// Commits that landed during the count may be in n too: counted
	// twice, they err toward refusing, for one refresh.
	b.at, b.queued, b.committed = now, n, b.committed-committed
	return n + b.committed + b.writing, b.rate
}

// refusal is the error for a kind over its bound, with the time the
// backlog should take to drain below it at the rate it drains now.
func (g *Gate) refusal(kind string, queued, limit int64, rate float64) error {
	wait := Hint(queued, limit, rate, g.maxHint())
	why := fmt.Sprintf("the admission bound (--max-backlog %d)", g.bound)
	if limit < g.bound {
		why = fmt.Sprintf("%.1fs of work at the %.0f/s they drain (--max-queue-wait %s)", float64(queued)/rate, rate, g.maxWait)
	}
	err := connect.NewError(connect.CodeResourceExhausted, fmt.Errorf(
		"kind %s has %d or more reconciles waiting for a worker, %s; retry after %s", kind, queued, why, wait))
	// The SDK's client retries after the hint in milliseconds; Retry-After
	// is the same in whole seconds, for HTTP clients that know only that.
	err.Meta().Set(client.RetryAfterHeader, strconv.FormatInt(wait.Milliseconds(), 10))
	err.Meta().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
	return err
}

// Hint is how long a backlog of queued takes to drain to three quarters
// of the bound at rate per second, between 50 ms and hi (1 s when the
// rate is not known yet): soon enough that the retried writes land before
// the workers run dry, late enough that they do not find the backlog
// still at the bound.
func Hint(queued, bound int64, rate float64, hi time.Duration) time.Duration {
	const lo = 50 * time.Millisecond
	if rate <= 0 {
		return min(time.Second, hi)
	}
	d := time.Duration(float64(queued-bound*3/4) / rate * float64(time.Second))
	return min(max(d, lo), hi).Round(time.Millisecond)
}

// maxHint bounds a retry hint: twice the wait target, so a drain rate
// misread low costs a poll a second rather than an idle queue, and 10 s
// without a target.
func (g *Gate) maxHint() time.Duration {
	if g.maxWait > 0 {
		return max(2*g.maxWait, 200*time.Millisecond)
	}
	return 10 * time.Second
}
