package broker

import (
	"context"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// onRelease gives back, at once, the tasks a worker says it will not
// finish: they are claimable again without waiting for their leases to run
// out, and no attempt is counted (the worker stopped, the task did not
// fail). Leases that are not current, not this worker's, or whose result
// is already on its way are left alone.
func (b *Broker) onRelease(s *session, r *convergev1.Release) {
	var give []store.Lease
	var previews []int64
	b.mu.Lock()
	for _, pl := range r.GetLeases() {
		if p := b.previewOf(s, pl); p != nil {
			delete(b.previews, p.id)
			previews = append(previews, p.id)
			continue
		}
		l := b.heldBy(s, pl)
		if l == nil {
			continue
		}
		delete(b.leases, l.TaskID)
		s.inflight--
		give = append(give, l.Lease)
	}
	b.mu.Unlock()
	b.givePreviewsBack(previews)
	if !b.giveBack(give, "the tasks a worker gave back", "session", s.id) {
		return
	}
	b.log.Info("worker released unfinished tasks", "session", s.id, "worker", s.name, "tasks", len(give))
	b.bus.Publish(notify.Tasks)
	b.wakeClaimer()
}

// giveBack makes leased tasks claimable again at once, and reports whether
// it did; what names them in the warning when the database refuses (they
// then run again after their lease).
func (b *Broker) giveBack(give []store.Lease, what string, attrs ...any) bool {
	if len(give) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.store.ReleaseLeases(ctx, give); err != nil {
		b.log.Warn("could not release "+what+"; they run again after the lease window",
			append(attrs, "tasks", len(give), "err", err)...)
		return false
	}
	return true
}
