package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// orphanBatch bounds the orphans marked for deletion in one pass.
const orphanBatch = 1000

// OrphanExpirer deletes, through the usual teardown, the children a
// composite stopped emitting and did not take back within its kind's
// orphan grace.
type OrphanExpirer struct {
	interval time.Duration
	store    *store.Store
	bus      *notify.Bus
	log      *slog.Logger
}

// NewOrphanExpirer returns an expirer that looks every interval.
func NewOrphanExpirer(interval time.Duration, st *store.Store, bus *notify.Bus, log *slog.Logger) *OrphanExpirer {
	return &OrphanExpirer{interval: interval, store: st, bus: bus, log: log}
}

// Name implements service.Service.
func (*OrphanExpirer) Name() string { return "orphan expirer" }

// Run expires orphans until ctx ends.
func (o *OrphanExpirer) Run(ctx context.Context) { every(ctx, o.interval, o.expire) }

// expire marks one batch a pass: marking starts teardowns, and a backlog
// is better spread over passes than started all at once.
func (o *OrphanExpirer) expire(ctx context.Context) {
	n, err := o.store.ExpireOrphans(ctx, orphanBatch)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("expiring orphans failed", "err", err)
		}
		return
	}
	if n > 0 {
		o.log.Info("orphans past their grace period are being deleted", "resources", n)
		o.bus.Publish(notify.Tasks)
	}
}
