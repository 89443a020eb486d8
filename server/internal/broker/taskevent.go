package broker

import (
	"context"
	"fmt"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// maxTaskEvents bounds the events one attempt of a task records, so a
// chatty handler cannot flood the events table; the first one past it is
// replaced by a Warning saying the rest are dropped.
const maxTaskEvents = 10

// onTaskEvent records an event a running task reports, on the task's
// resource, while its lease is current. Anything else (a preview, a lease
// reassigned, finished or never this worker's, an attempt over its cap)
// is dropped: the worker cannot act on a refusal, and its stream is fine.
func (b *Broker) onTaskEvent(s *session, e *convergev1.TaskEvent) {
	pl := e.GetLease()
	b.mu.Lock()
	if b.previewOf(s, pl) != nil {
		b.mu.Unlock()
		b.log.Debug("dropping a preview's task event: a preview records nothing", "task", pl.GetTaskId(), "worker", s.name)
		return
	}
	l := b.heldBy(s, pl)
	if l == nil {
		b.mu.Unlock()
		b.log.Debug("dropping a task event: the lease is not current, or not this worker's",
			"task", pl.GetTaskId(), "epoch", pl.GetEpoch(), "worker", s.name, "reason", e.GetReason())
		return
	}
	l.events++
	n, lease := l.events, l.Lease
	b.mu.Unlock()

	typ, reason, message := e.GetType(), e.GetReason(), e.GetMessage()
	switch {
	case n == maxTaskEvents+1:
		typ, reason = "Warning", "TaskEventsDropped"
		message = fmt.Sprintf("the task reported more than %d events in this attempt; the rest are dropped", maxTaskEvents)
	case n > maxTaskEvents+1:
		return
	}
	// Recorded before the stream's next message is read, so an event is
	// ordered before the result that follows it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	recorded, err := b.store.RecordTaskEvent(ctx, lease, typ, reason, message, s.actor)
	switch {
	case err != nil:
		b.log.Warn("could not record a task event", "task", lease.TaskID, "reason", reason, "err", err)
	case !recorded:
		b.log.Debug("dropping a task event: the task no longer holds its lease", "task", lease.TaskID, "reason", reason)
	}
}
