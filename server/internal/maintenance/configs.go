package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// ConfigRequeueRate is how many resources a second are reconciled again
// after a provider config edit changed their effective config: enough to
// carry an edit to a large kind within minutes, few enough that the
// queue's other work keeps flowing meanwhile.
const ConfigRequeueRate = 500

// ConfigRequeuer reconciles again, at a bounded rate, the resources whose
// effective provider config an edit changed (store.RequeueForConfigs).
type ConfigRequeuer struct {
	interval time.Duration
	perPass  int
	store    *store.Store
	bus      *notify.Bus
	log      *slog.Logger
}

// NewConfigRequeuer returns a requeuer that queues up to rate resources a
// second, a pass every interval.
func NewConfigRequeuer(interval time.Duration, rate int, st *store.Store, bus *notify.Bus, log *slog.Logger) *ConfigRequeuer {
	perPass := max(1, int(float64(rate)*interval.Seconds()))
	return &ConfigRequeuer{interval: interval, perPass: perPass, store: st, bus: bus, log: log}
}

// Name implements service.Service.
func (*ConfigRequeuer) Name() string { return "config requeuer" }

// Run requeues until ctx ends.
func (q *ConfigRequeuer) Run(ctx context.Context) { every(ctx, q.interval, q.pass) }

// pass spends one pass's budget on the oldest pending config changes.
func (q *ConfigRequeuer) pass(ctx context.Context) {
	pending, err := q.store.PendingConfigRequeues(ctx)
	if err != nil || !pending {
		if err != nil && ctx.Err() == nil {
			q.log.Warn("looking for provider config changes to requeue failed", "err", err)
		}
		return
	}
	budget, queued := q.perPass, int64(0)
	for budget > 0 {
		res, found, err := q.store.RequeueForConfigs(ctx, budget)
		if err != nil {
			if ctx.Err() == nil {
				q.log.Warn("requeueing resources after a provider config change failed", "err", err)
			}
			break
		}
		if !found {
			break
		}
		queued += res.Queued
		if res.Done {
			q.log.Info("reconciled resources again after a provider config change",
				"kind", res.Kind, "version", res.Version, "change", res.What, "resources", res.Total)
		}
		budget -= int(max(res.Queued, 1))
		if !res.Done {
			break
		}
	}
	if queued > 0 {
		q.bus.Publish(notify.Tasks)
	}
}
