package converge

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Limits on what the worker holds; they match the protocol's list limits.
const (
	// maxUnacked results are buffered at most before the worker stops
	// starting tasks (running handlers still finish and are buffered).
	maxUnacked = 10000
	// maxWaiting tasks wait for a free slot at most; beyond that a task is
	// dropped unattested and the server re-dispatches it after its lease.
	maxWaiting = 10000
	// maxListed leases go in one Heartbeat or Subscribe at most.
	maxListed = 10000
)

// Reasons a task is not accepted.
var (
	errDraining  = errors.New("worker is draining")
	errDuplicate = errors.New("task already held")
	errQueueFull = errors.New("too many tasks waiting for a free slot")
)

// leaseKey identifies one claim of one task.
type leaseKey struct{ taskID, epoch int64 }

func keyOf(l *convergev1.Lease) leaseKey { return leaseKey{l.GetTaskId(), l.GetEpoch()} }

// execution is one accepted task: waiting for a slot, then running.
type execution struct {
	key     leaseKey
	task    *convergev1.Task
	handler HandlerFunc
	ctx     context.Context
	cancel  context.CancelFunc
	// abandoned is set when the server cancelled the task or declared its
	// lease lost: the handler is cancelled, no longer attested, and its
	// result is dropped.
	abandoned bool
}

// pending is a result the server has not acknowledged yet.
type pending struct {
	rep *report
	seq uint64
}

// ledger is the worker's state that outlives any one stream: which tasks
// wait or run, and which results await acknowledgement. It decides when a
// task may start (free slot, room in the result buffer) and what a stream's
// sender must send. It does no I/O and never blocks.
type ledger struct {
	mu         sync.Mutex
	capacity   int
	maxUnacked int
	maxWaiting int
	// base is the parent of every handler context: it carries the values of
	// Run's context but not its cancellation, so a drain lets handlers finish.
	base context.Context

	running map[leaseKey]*execution
	waiting map[leaseKey]*execution
	queue   []leaseKey // FIFO order of waiting; keys no longer waiting are skipped
	results map[leaseKey]*pending
	unsent  []leaseKey // results the live stream has not sent yet, oldest first
	seq     uint64
	// releases are leases to give back to the server on the live stream
	// (see Release): tasks the worker will not finish.
	releases []*convergev1.Lease
	// events are task events waiting for a stream (event.go); they
	// outlive a stream, as a running task's lease may.
	events []*convergev1.TaskEvent

	live     bool // a stream is subscribed and forwarding results
	draining bool

	kick    chan struct{} // capacity 1: wakes the live stream's sender
	changed chan struct{} // closed and replaced whenever state changes
}

func newLedger(capacity int) *ledger {
	return &ledger{
		capacity:   capacity,
		maxUnacked: maxUnacked,
		maxWaiting: maxWaiting,
		base:       context.Background(),
		running:    make(map[leaseKey]*execution),
		waiting:    make(map[leaseKey]*execution),
		results:    make(map[leaseKey]*pending),
		kick:       make(chan struct{}, 1),
		changed:    make(chan struct{}),
	}
}

// open sets the parent of handler contexts.
func (l *ledger) open(base context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.base = base
}

// accept takes a task the server dispatched and returns the executions that
// may start now.
func (l *ledger) accept(t *convergev1.Task, h HandlerFunc) ([]*execution, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := keyOf(t.GetLease())
	switch {
	case l.draining:
		// Sent before the server saw the Drain: give it back at once.
		l.releaseLocked(t.GetLease())
		return nil, errDraining
	case l.running[k] != nil || l.waiting[k] != nil || l.results[k] != nil:
		return nil, errDuplicate
	case len(l.waiting) >= l.maxWaiting:
		return nil, errQueueFull
	}
	l.waiting[k] = &execution{key: k, task: t, handler: h}
	l.queue = append(l.queue, k)
	return l.startableLocked(), nil
}

// startableLocked moves waiting tasks to running while a slot is free and
// the result buffer has room, and returns them for the caller to launch.
func (l *ledger) startableLocked() []*execution {
	var out []*execution
	for len(l.queue) > 0 && len(l.running) < l.capacity && len(l.results) < l.maxUnacked {
		k := l.queue[0]
		l.queue = l.queue[1:]
		ex := l.waiting[k]
		if ex == nil {
			continue
		}
		delete(l.waiting, k)
		ex.ctx, ex.cancel = context.WithCancel(l.base)
		if d := ex.task.GetDeadline(); d != nil {
			ex.ctx, ex.cancel = withDeadline(ex.ctx, ex.cancel, d.AsTime())
		}
		l.running[k] = ex
		out = append(out, ex)
	}
	if len(l.queue) == 0 {
		l.queue = nil // let the backing array go
	}
	return out
}

// withDeadline layers a deadline over ctx; the returned cancel releases both.
func withDeadline(ctx context.Context, cancel context.CancelFunc, d time.Time) (context.Context, context.CancelFunc) {
	dctx, dcancel := context.WithDeadline(ctx, d)
	return dctx, func() { dcancel(); cancel() }
}

// finish records a handler's result and returns the executions that may
// start in its place.
func (l *ledger) finish(ex *execution, rep *report) []*execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	ex.cancel()
	delete(l.running, ex.key)
	if !ex.abandoned {
		l.seq++
		l.results[ex.key] = &pending{rep: rep, seq: l.seq}
		if l.live {
			l.unsent = append(l.unsent, ex.key)
			l.poke()
		}
	}
	l.broadcastLocked()
	return l.startableLocked()
}

// dropped reports whether ex's result will be dropped: the server
// cancelled the task, or the worker gave it back.
func (l *ledger) dropped(ex *execution) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return ex.abandoned
}

// ack forgets an acknowledged result and returns the executions that may
// start now that the buffer has room.
func (l *ledger) ack(k leaseKey) []*execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.results[k] == nil {
		return nil
	}
	delete(l.results, k)
	l.broadcastLocked()
	return l.startableLocked()
}

// abandon stops a task the server no longer wants from us: its handler is
// cancelled and its result, now or later, is dropped. It reports whether the
// worker held the task.
func (l *ledger) abandon(k leaseKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.abandonLocked(k)
}

func (l *ledger) abandonLocked(k leaseKey) bool {
	held := false
	if ex := l.running[k]; ex != nil && !ex.abandoned {
		ex.abandoned = true
		ex.cancel()
		held = true
	}
	if l.waiting[k] != nil {
		delete(l.waiting, k)
		held = true
	}
	if l.results[k] != nil {
		delete(l.results, k)
		held = true
	}
	if held {
		l.broadcastLocked()
	}
	return held
}

// attestedLocked lists the tasks the worker still intends to finish: running
// handlers and tasks waiting for a slot.
func (l *ledger) attestedLocked() []*convergev1.Lease {
	out := make([]*convergev1.Lease, 0, len(l.running)+len(l.waiting))
	for _, ex := range l.running {
		if !ex.abandoned {
			out = appendLease(out, ex.task.GetLease())
		}
	}
	for _, ex := range l.waiting {
		out = appendLease(out, ex.task.GetLease())
	}
	return out
}

// attested lists the leases a Heartbeat attests.
func (l *ledger) attested() []*convergev1.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attestedLocked()
}

// resumable lists the leases a new stream's Subscribe resumes: attested
// tasks first, then unacknowledged results.
func (l *ledger) resumable() []*convergev1.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.attestedLocked()
	for _, p := range l.results {
		out = appendLease(out, p.rep.result.GetLease())
	}
	return out
}

// appendLease lists a lease exactly as the server sent it (generation
// included), up to the protocol's list limit.
func appendLease(out []*convergev1.Lease, lease *convergev1.Lease) []*convergev1.Lease {
	if len(out) >= maxListed {
		return out
	}
	return append(out, lease)
}

// beginSession is called when a stream is subscribed: it drops the leases
// the server declared lost and queues every unacknowledged result for
// (re-)sending on the new stream. Resumed leases the server did not declare
// lost are kept, whether it listed them as adopted or not at all.
func (l *ledger) beginSession(lost []*convergev1.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lease := range lost {
		l.abandonLocked(keyOf(lease))
	}
	l.live = true
	l.unsent = l.unsent[:0]
	for k := range l.results {
		l.unsent = append(l.unsent, k)
	}
	slices.SortFunc(l.unsent, func(a, b leaseKey) int {
		return cmp.Compare(l.results[a].seq, l.results[b].seq)
	})
	l.poke()
}

// endSession is called when a stream breaks; results wait for the next one.
// Releases do not: the server takes them only on the stream that holds
// the leases, so those tasks run again after their lease instead.
func (l *ledger) endSession() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live = false
	l.unsent = nil
	l.releases = nil
	l.broadcastLocked()
}

// takeReleases returns the leases to give back, at most maxListed, and
// forgets them.
func (l *ledger) takeReleases() []*convergev1.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.releases) == 0 {
		return nil
	}
	n := min(len(l.releases), maxListed)
	out := l.releases[:n:n]
	l.releases = l.releases[n:]
	if len(l.releases) > 0 {
		l.poke()
	} else {
		l.releases = nil
	}
	l.broadcastLocked()
	return out
}

// releaseLocked queues lease to be given back, if a stream can take it.
func (l *ledger) releaseLocked(lease *convergev1.Lease) {
	if l.live {
		l.releases = append(l.releases, lease)
		l.poke()
	}
}

// takeUnsent returns the oldest results the live stream has not sent yet,
// whole, as long as they need at most max messages in all (the first is
// taken whatever it needs), and whether more remain. They stay buffered
// until acked.
func (l *ledger) takeUnsent(max int) (reps []*report, more bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for len(l.unsent) > 0 {
		p := l.results[l.unsent[0]]
		if p != nil && n > 0 && n+p.rep.messages() > max {
			break
		}
		l.unsent = l.unsent[1:]
		if p != nil {
			reps = append(reps, p.rep)
			n += p.rep.messages()
		}
	}
	return reps, len(l.unsent) > 0
}

// startDrain stops the worker taking tasks: waiting tasks are given back
// to the server, which re-dispatches them at once, and later ones are
// refused.
func (l *ledger) startDrain() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.draining = true
	for _, ex := range l.waiting {
		l.releaseLocked(ex.task.GetLease())
	}
	clear(l.waiting)
	l.queue = nil
	l.poke()
	l.broadcastLocked()
}

func (l *ledger) isDraining() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.draining
}

// releaseRunning gives every running task back to the server: its handler
// is cancelled and its result, now or later, dropped, as for abandon. It
// returns how many it gave back.
func (l *ledger) releaseRunning() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ex := range l.running {
		if !ex.abandoned {
			ex.abandoned = true
			ex.cancel()
			l.releaseLocked(ex.task.GetLease())
			n++
		}
	}
	l.broadcastLocked()
	return n
}

// abandonRunning cancels every running handler and drops its result, for a
// worker that stops without a stream to report on.
func (l *ledger) abandonRunning() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ex := range l.running {
		ex.abandoned = true
		ex.cancel()
	}
	l.broadcastLocked()
}

// handlers counts the running handlers, abandoned ones included.
func (l *ledger) handlers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.running)
}

// busy counts the running handlers whose results will be reported.
func (l *ledger) busy() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.busyLocked()
}

func (l *ledger) busyLocked() int {
	n := 0
	for _, ex := range l.running {
		if !ex.abandoned {
			n++
		}
	}
	return n
}

// unacked counts buffered results.
func (l *ledger) unacked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.results)
}

// await blocks until cond holds (checked under the lock) or timeout fires;
// it reports whether cond held.
func (l *ledger) await(timeout <-chan time.Time, cond func(*ledger) bool) bool {
	for {
		l.mu.Lock()
		ok := cond(l)
		ch := l.changed
		l.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-timeout:
			return false
		}
	}
}

// poke wakes the sender without blocking; one pending wake-up is enough
// because the sender takes everything queued when it wakes.
func (l *ledger) poke() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *ledger) broadcastLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}
