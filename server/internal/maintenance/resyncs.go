package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// resyncBatch bounds the resyncs queued in one transaction.
const resyncBatch = 1000

// ResyncQueuer queues the resyncs that came due: settled resources
// of kinds that re-observe them on an interval.
type ResyncQueuer struct {
	interval time.Duration
	// resyncing reports whether any kind opts into resync; while none does,
	// nothing is looked for (no query at all).
	resyncing func() bool
	store     *store.Store
	bus       *notify.Bus
	log       *slog.Logger
}

// NewResyncQueuer returns a queuer that looks every interval while
// resyncing reports true.
func NewResyncQueuer(interval time.Duration, resyncing func() bool, st *store.Store, bus *notify.Bus, log *slog.Logger) *ResyncQueuer {
	return &ResyncQueuer{interval: interval, resyncing: resyncing, store: st, bus: bus, log: log}
}

// Name implements service.Service.
func (*ResyncQueuer) Name() string { return "resync queuer" }

// Run queues resyncs until ctx ends.
func (q *ResyncQueuer) Run(ctx context.Context) { every(ctx, q.interval, q.queue) }

func (q *ResyncQueuer) queue(ctx context.Context) {
	if !q.resyncing() {
		return
	}
	batched(resyncBatch, func() (int, error) {
		n, err := q.store.QueueResyncs(ctx, resyncBatch)
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("queueing resyncs failed", "err", err)
			}
			return 0, err
		}
		if n > 0 {
			q.bus.Publish(notify.Tasks)
		}
		return n, nil
	})
}
