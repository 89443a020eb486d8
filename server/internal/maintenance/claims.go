package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// ClaimReaper requeues the tasks of a claimer that is gone. A replica
// killed without a clean shutdown stops heartbeating, and its claims would
// otherwise wait out the whole lease although the replica is back under a
// new member id at once, or its workers went elsewhere. A claim lapses when
// its claimer has not heartbeated for members.LiveWithin and the claim went
// unrenewed as long (store.Lapse), so a worker that resumes on another
// replica after a clean shutdown keeps its leases.
//
// A claimer is released only once passes at least confirm apart, with no
// failed pass between them, have seen it lapsed: right after a database
// outage every member looks silent until its next heartbeat, due within
// members.Interval, and releasing then would rerun work still in hand.
type ClaimReaper struct {
	interval time.Duration
	lapse    store.Lapse
	confirm  time.Duration
	store    *store.Store
	bus      *notify.Bus
	log      *slog.Logger
	// seen holds when a pass first saw each claimer lapsed.
	seen map[string]time.Time
}

// NewClaimReaper returns a reaper that looks every interval, for brokers
// whose leases last lease.
func NewClaimReaper(interval, lease time.Duration, st *store.Store, bus *notify.Bus, log *slog.Logger) *ClaimReaper {
	return &ClaimReaper{
		interval: interval,
		lapse:    store.Lapse{Lease: lease, LiveWithin: members.LiveWithin},
		confirm:  2 * members.Interval,
		store:    st, bus: bus, log: log,
		seen: map[string]time.Time{},
	}
}

// Name implements service.Service.
func (*ClaimReaper) Name() string { return "claim reaper" }

// Run reaps until ctx ends. With a lease no longer than the liveness
// window a claim expires before it can lapse, and the lease reaper takes
// it: there is nothing to look for.
func (r *ClaimReaper) Run(ctx context.Context) {
	if r.lapse.Lease <= r.lapse.LiveWithin {
		<-ctx.Done()
		return
	}
	every(ctx, r.interval, r.reap)
}

func (r *ClaimReaper) reap(ctx context.Context) {
	now := time.Now()
	lapsed, err := r.store.LapsedClaimers(ctx, r.lapse)
	if err != nil {
		r.fail(ctx, "looking for lapsed claims failed", err)
		return
	}
	var due []string
	seen := make(map[string]time.Time, len(lapsed))
	for _, id := range lapsed {
		first, ok := r.seen[id]
		if !ok {
			first = now
		}
		seen[id] = first
		if now.Sub(first) >= r.confirm {
			due = append(due, id)
		}
	}
	r.seen = seen
	if len(due) == 0 {
		return
	}
	batched(reapBatch, func() (int, error) {
		n, err := r.store.ReleaseLapsedClaims(ctx, due, r.lapse, reapBatch)
		if err != nil {
			r.fail(ctx, "releasing lapsed claims failed", err)
			return 0, err
		}
		if n > 0 {
			r.log.Info("requeued tasks whose claimer is gone", "tasks", n, "claimers", due)
			r.bus.Publish(notify.Tasks)
		}
		return n, nil
	})
}

// fail forgets every sighting: the next passes must see a claimer lapsed
// anew, with the database reachable, before it is released.
func (r *ClaimReaper) fail(ctx context.Context, msg string, err error) {
	clear(r.seen)
	if ctx.Err() == nil {
		r.log.Warn(msg, "err", err)
	}
}
