package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// reapBatch bounds the tasks requeued in one transaction.
const reapBatch = 1000

// LeaseReaper requeues tasks whose lease ran out: their worker or broker
// stopped renewing it, so another may run them.
type LeaseReaper struct {
	interval time.Duration
	store    *store.Store
	bus      *notify.Bus
	log      *slog.Logger
}

// NewLeaseReaper returns a reaper that looks every interval.
func NewLeaseReaper(interval time.Duration, st *store.Store, bus *notify.Bus, log *slog.Logger) *LeaseReaper {
	return &LeaseReaper{interval: interval, store: st, bus: bus, log: log}
}

// Name implements service.Service.
func (*LeaseReaper) Name() string { return "lease reaper" }

// Run reaps until ctx ends.
func (r *LeaseReaper) Run(ctx context.Context) { every(ctx, r.interval, r.reap) }

func (r *LeaseReaper) reap(ctx context.Context) {
	batched(reapBatch, func() (int, error) {
		n, err := r.store.ReleaseExpired(ctx, reapBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("releasing expired leases failed", "err", err)
			}
			return 0, err
		}
		if n > 0 {
			r.log.Info("requeued tasks whose lease expired", "tasks", n)
			r.bus.Publish(notify.Tasks)
		}
		return n, nil
	})
}
