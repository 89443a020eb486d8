package broker

import (
	"context"
	"time"

	"github.com/convergehq/converge/server/internal/store"
)

// Pending tasks are claimed but not yet sent: every worker that serves
// them was busy. They go to the first such worker with a free slot, and
// back to the queue as soon as no connected worker is ready for them, so
// another replica's workers can take them and the resource says it has no
// worker instead of seeming to run.

// drainPending sends parked tasks to s while it has free slots. Callers
// hold b.mu.
func (b *Broker) drainPending(s *session) {
	now := time.Now()
	for k, ls := range b.pending {
		for len(ls) > 0 && b.eligible(s, now) {
			l := ls[0]
			if !s.ready(reactionKey{k.kind, k.version, l.reaction}) {
				break
			}
			ls = ls[1:]
			b.dispatch(s, l, now)
		}
		if len(ls) == 0 {
			delete(b.pending, k)
		} else {
			b.pending[k] = ls
		}
	}
}

// releaseStranded gives back pending tasks that no connected worker is
// ready for any more (their workers left, drained or stopped being ready).
func (b *Broker) releaseStranded(ctx context.Context) {
	b.mu.Lock()
	var give []store.Lease
	for k, ls := range b.pending {
		keep := ls[:0]
		for _, l := range ls {
			if b.anyReady(reactionKey{k.kind, k.version, l.reaction}) {
				keep = append(keep, l)
				continue
			}
			give = append(give, l.Lease)
			delete(b.leases, l.TaskID)
		}
		if len(keep) == 0 {
			delete(b.pending, k)
		} else {
			b.pending[k] = keep
		}
	}
	b.mu.Unlock()
	if len(give) == 0 {
		return
	}
	if err := b.store.ReleaseLeases(ctx, give); err != nil && ctx.Err() == nil {
		b.log.Warn("could not give back tasks no connected worker is ready for; they run again after the lease window",
			"tasks", len(give), "err", err)
	}
	b.wakeClaimer()
}

// anyReady reports whether a connected, undrained worker is ready for rk
// (busy or not). Callers hold b.mu.
func (b *Broker) anyReady(rk reactionKey) bool {
	for s := range b.sessions {
		if !s.closed && !s.draining && s.ready(rk) {
			return true
		}
	}
	return false
}
