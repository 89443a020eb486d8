package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

// pruneBatch bounds the changes deleted in one transaction.
const pruneBatch = 10000

// ChangeTrimmer deletes change-feed entries older than the retention.
// Changes are ordered by transaction id, not time, but transaction ids
// grow with time: each pass samples the next id, and the trimmer cuts
// below the newest sample that is older than the retention.
type ChangeTrimmer struct {
	interval  time.Duration
	retention time.Duration
	store     *store.Store
	log       *slog.Logger
	// samples are the (time, next xid) pairs taken within the retention.
	samples []xidSample
}

type xidSample struct {
	at  time.Time
	xid uint64
}

// NewChangeTrimmer returns a trimmer that samples every interval and keeps
// changes for retention.
func NewChangeTrimmer(interval, retention time.Duration, st *store.Store, log *slog.Logger) *ChangeTrimmer {
	return &ChangeTrimmer{interval: interval, retention: retention, store: st, log: log}
}

// Name implements service.Service.
func (*ChangeTrimmer) Name() string { return "change-feed trimmer" }

// Run trims until ctx ends.
func (c *ChangeTrimmer) Run(ctx context.Context) { every(ctx, c.interval, c.trim) }

func (c *ChangeTrimmer) trim(ctx context.Context) {
	xid, err := c.store.CurrentXID(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("reading the next transaction id failed; the change feed is trimmed next time", "err", err)
		}
		return
	}
	cut := c.sample(time.Now(), xid)
	if cut == 0 {
		return
	}
	batched(pruneBatch, func() (int, error) {
		n, err := c.store.PruneChanges(ctx, cut, pruneBatch)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("trimming the change feed failed", "err", err)
		}
		return int(n), err
	})
}

// sample records (now, xid) and returns the xid to cut below: that of the
// newest sample at least the retention old, or 0 when there is none yet.
// Samples that old are dropped once used.
func (c *ChangeTrimmer) sample(now time.Time, xid uint64) uint64 {
	c.samples = append(c.samples, xidSample{now, xid})
	cut := uint64(0)
	keep := c.samples[:0]
	for _, s := range c.samples {
		if now.Sub(s.at) >= c.retention {
			cut = s.xid
		} else {
			keep = append(keep, s)
		}
	}
	c.samples = keep
	return cut
}
