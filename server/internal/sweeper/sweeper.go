// Package sweeper runs the control plane's background duties: requeueing
// tasks whose lease ran out, deleting orphans whose grace ended, queueing
// resyncs that came due, trimming
// the change feed to its retention, and forgetting replicas that stopped
// heartbeating.
package sweeper

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// Config tunes the sweeper.
type Config struct {
	// ReapInterval is how often expired leases are looked for.
	ReapInterval time.Duration
	// ChangeRetention is how long the change feed keeps entries; a Watch
	// cursor older than that has to list again.
	ChangeRetention time.Duration
	// Resyncing reports whether any kind opts into resync; while none
	// does, due resyncs are not looked for (no query at all).
	Resyncing func() bool
}

// Sweeper runs the duties.
type Sweeper struct {
	cfg   Config
	store *store.Store
	bus   *notify.Bus
	log   *slog.Logger
	// xids samples (time, next xid) so retention can be cut by xid.
	xids []xidSample
}

type xidSample struct {
	at  time.Time
	xid uint64
}

// New returns a sweeper.
func New(cfg Config, st *store.Store, bus *notify.Bus, log *slog.Logger) *Sweeper {
	if cfg.ReapInterval <= 0 {
		cfg.ReapInterval = time.Second
	}
	if cfg.ChangeRetention <= 0 {
		cfg.ChangeRetention = time.Hour
	}
	return &Sweeper{cfg: cfg, store: st, bus: bus, log: log}
}

// Run sweeps until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	reap := time.NewTicker(s.cfg.ReapInterval)
	defer reap.Stop()
	slow := time.NewTicker(30 * time.Second)
	defer slow.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-reap.C:
			s.reap(ctx)
			s.expireOrphans(ctx)
			s.queueResyncs(ctx)
		case <-slow.C:
			s.trimChanges(ctx)
			if _, err := s.store.ForgetDeadMembers(ctx, 10*time.Minute); err != nil && ctx.Err() == nil {
				s.log.Warn("forgetting dead members failed", "err", err)
			}
		}
	}
}

func (s *Sweeper) reap(ctx context.Context) {
	for {
		n, err := s.store.ReleaseExpired(ctx, 1000)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("releasing expired leases failed", "err", err)
			}
			return
		}
		if n > 0 {
			s.log.Info("requeued tasks whose lease expired", "tasks", n)
			s.bus.Publish(notify.Tasks)
		}
		if n < 1000 {
			return
		}
	}
}

// trimChanges deletes changes older than the retention. Transactions are
// numbered in time order, so it samples the next xid each pass and cuts
// below the newest sample that is older than the retention.
func (s *Sweeper) trimChanges(ctx context.Context) {
	xid, err := s.store.CurrentXID(ctx)
	if err != nil {
		return
	}
	now := time.Now()
	s.xids = append(s.xids, xidSample{now, xid})
	cut := uint64(0)
	keep := s.xids[:0]
	for _, smp := range s.xids {
		if now.Sub(smp.at) >= s.cfg.ChangeRetention {
			cut = smp.xid
		} else {
			keep = append(keep, smp)
		}
	}
	s.xids = keep
	if cut == 0 {
		return
	}
	for {
		n, err := s.store.PruneChanges(ctx, cut, 10000)
		if err != nil || n < 10000 {
			return
		}
	}
}

// queueResyncs queues the resyncs that came due.
func (s *Sweeper) queueResyncs(ctx context.Context) {
	if s.cfg.Resyncing == nil || !s.cfg.Resyncing() {
		return
	}
	for {
		n, err := s.store.QueueResyncs(ctx, 1000)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("queueing resyncs failed", "err", err)
			}
			return
		}
		if n > 0 {
			s.bus.Publish(notify.Tasks)
		}
		if n < 1000 {
			return
		}
	}
}

func (s *Sweeper) expireOrphans(ctx context.Context) {
	n, err := s.store.ExpireOrphans(ctx, 1000)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("expiring orphans failed", "err", err)
		}
		return
	}
	if n > 0 {
		s.log.Info("orphans past their grace period are being deleted", "resources", n)
		s.bus.Publish(notify.Tasks)
	}
}
