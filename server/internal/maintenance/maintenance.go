// Package maintenance holds the control plane's background duties, one
// service a file: requeueing tasks whose lease ran out (leases.go) or
// whose claimer is gone (claims.go), deleting orphans whose grace ended
// (orphans.go), queueing resyncs that came due (resyncs.go), reconciling
// again what a provider config edit changed (configs.go), trimming the
// change feed to its retention (changes.go), and forgetting replicas that
// stopped heartbeating (members.go). Each asks the store for one thing on
// an interval of its own, and runs until its context ends.
package maintenance

import (
	"context"
	"time"
)

// Default intervals and retention.
const (
	// ReapInterval is how often expired leases, lapsed claims, orphans past
	// their grace and due resyncs are looked for: each costs one indexed
	// probe that finds nothing in a healthy cluster.
	ReapInterval = time.Second
	// TrimInterval is how often the change feed is trimmed and dead
	// members forgotten; neither is urgent.
	TrimInterval = 30 * time.Second
	// ChangeRetention is how long the change feed keeps entries: a Watch
	// cursor older than that has to list again.
	ChangeRetention = time.Hour
)

// Config tunes the duties; zero fields take the defaults above.
type Config struct {
	ReapInterval    time.Duration
	TrimInterval    time.Duration
	ChangeRetention time.Duration
}

// WithDefaults fills zero fields with the defaults.
func (c Config) WithDefaults() Config {
	if c.ReapInterval <= 0 {
		c.ReapInterval = ReapInterval
	}
	if c.TrimInterval <= 0 {
		c.TrimInterval = TrimInterval
	}
	if c.ChangeRetention <= 0 {
		c.ChangeRetention = ChangeRetention
	}
	return c
}

// every calls pass each interval until ctx ends, the first time one
// interval after the start.
func every(ctx context.Context, interval time.Duration, pass func(context.Context)) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			pass(ctx)
		}
	}
}

// batched calls step until it handles fewer than limit items or fails: a
// backlog is worked off in one pass, a batch a transaction.
func batched(limit int, step func() (int, error)) {
	for {
		n, err := step()
		if err != nil || n < limit {
			return
		}
	}
}
