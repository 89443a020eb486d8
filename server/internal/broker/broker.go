// Package broker hands queued work to connected workers and applies what
// they answer. It claims tasks from the queue in batches, pushes them to
// worker streams with free capacity, renews the leases workers attest,
// enforces task deadlines and applies results in batches.
package broker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
)

// Config tunes a broker. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// MemberID identifies this replica as the holder of its leases.
	MemberID string
	// Lease is how long a claim survives without a renewal; a dead
	// worker's or replica's tasks run again after it.
	Lease time.Duration
	// HeartbeatInterval is how often workers attest running tasks and the
	// broker renews their leases.
	HeartbeatInterval time.Duration
	// PollInterval is the failsafe: the queue is checked this often even
	// without a wake-up.
	PollInterval time.Duration
	// MaxClaim caps the tasks of one (kind, version, trigger) per claim.
	MaxClaim int
	// ApplyBatch caps the results applied in one transaction.
	ApplyBatch int
	// DeadlineGrace is added to a task's deadline before the broker gives
	// up on it.
	DeadlineGrace time.Duration
	// Backoff shapes retries of transient failures.
	Backoff store.Backoff
	// Metrics counts claims and completions; nil counts nothing.
	Metrics *metrics.Metrics
	// Tile gives this replica's tile of the shards for a kind version (see
	// store.Want); nil claims every shard alike.
	Tile func(kind string, version int32) (lo, hi int16)
	// Records keeps task records; nil keeps none.
	Records *taskrec.Recorder
	// Authz identifies workers by their bearer tokens; while it has rules,
	// a worker with no identity is refused. nil checks no tokens.
	Authz *authz.Policy
}

// DefaultConfig returns the production defaults.
func DefaultConfig() Config {
	return Config{
		Lease:             30 * time.Second,
		HeartbeatInterval: 5 * time.Second,
		PollInterval:      time.Second,
		MaxClaim:          1000,
		ApplyBatch:        1000,
		DeadlineGrace:     5 * time.Second,
		Backoff:           store.Backoff{Base: time.Second, Max: 5 * time.Minute},
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Lease <= 0 {
		c.Lease = d.Lease
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = d.HeartbeatInterval
	}
	if c.PollInterval <= 0 {
		c.PollInterval = d.PollInterval
	}
	if c.MaxClaim <= 0 {
		c.MaxClaim = d.MaxClaim
	}
	if c.ApplyBatch <= 0 {
		c.ApplyBatch = d.ApplyBatch
	}
	if c.DeadlineGrace <= 0 {
		c.DeadlineGrace = d.DeadlineGrace
	}
	if c.Backoff.Base <= 0 {
		c.Backoff.Base = d.Backoff.Base
	}
	if c.Backoff.Max <= 0 {
		c.Backoff.Max = d.Backoff.Max
	}
	return c
}

// Broker serves WorkerService.
type Broker struct {
	cfg   Config
	store *store.Store
	kinds *kinds.Registry
	bus   *notify.Bus
	log   *slog.Logger

	mu       sync.Mutex
	sessions map[*session]struct{}
	leases   map[int64]*lease
	pending  map[triggerKey][]*lease
	// previews are the preview tasks out with workers, by lease task id.
	previews map[int64]*preview

	flows *flow.Cache
	// servedChanged is told when what the workers serve changes.
	servedChanged func()

	claimWake chan struct{}
	retryAt   chan time.Time
	results   chan *result
	// stopping is closed when Run's context ends, ending worker streams.
	stopping chan struct{}
}

type reactionKey struct {
	kind     string
	version  int32
	reaction string
}

type kindKey struct {
	kind    string
	version int32
}

type triggerKey struct {
	kind    string
	version int32
	trigger string
}

// lease is a task this broker holds.
type lease struct {
	store.Lease
	key      triggerKey
	reaction string
	revision int64
	// task is the message to send; nil once sent.
	task *convergev1.Task
	// session is the worker running the task; nil while pending.
	session  *session
	deadline time.Time
	attested time.Time
	// done: a result (or a deadline failure) is on its way to the applier.
	done bool
	// namespace is the resource's, for a composer's references; name and
	// attempt identify the attempt in the log of a failure.
	namespace string
	name      string
	attempt   int32
	// parts of a composer's answer received so far, with their child count;
	// overflow: too many children, or parts out of order.
	parts        []*convergev1.Composition
	partChildren int
	overflow     bool
	// events counts the task events this attempt reported (taskevent.go).
	events int
	// rec is the task's record being filled; nil when records are off.
	rec *taskrec.Pending
	// span is the task's trace span (trace.go); nil when untraced.
	span trace.Span
}

// New returns a broker. Run it with Run and mount Handler.
func New(cfg Config, st *store.Store, reg *kinds.Registry, bus *notify.Bus, log *slog.Logger) *Broker {
	cfg = cfg.withDefaults()
	return &Broker{
		cfg: cfg, store: st, kinds: reg, bus: bus, log: log,
		sessions:  map[*session]struct{}{},
		leases:    map[int64]*lease{},
		pending:   map[triggerKey][]*lease{},
		previews:  map[int64]*preview{},
		flows:     flow.NewCache(10000),
		claimWake: make(chan struct{}, 1),
		retryAt:   make(chan time.Time, 64),
		results:   make(chan *result, 4*cfg.ApplyBatch),
		stopping:  make(chan struct{}),
	}
}

// Name implements service.Service.
func (*Broker) Name() string { return "broker" }

// Run claims, renews and applies until ctx ends, then gives back what it
// holds but has not sent, and applies results already received.
func (b *Broker) Run(ctx context.Context) {
	var wg sync.WaitGroup
	applyCtx, stopApply := context.WithCancel(context.Background())
	wg.Add(4)
	go func() { defer wg.Done(); b.claimLoop(ctx) }()
	go func() { defer wg.Done(); b.previewLoop(ctx) }()
	go func() { defer wg.Done(); b.leaseLoop(ctx) }()
	go func() { defer wg.Done(); b.configLoop(ctx) }()
	applied := make(chan struct{})
	go func() { defer close(applied); b.applyLoop(applyCtx) }()
	<-ctx.Done()
	close(b.stopping)
	wg.Wait()
	b.releasePending()
	// Let results already received reach the database before stopping.
	drainUntil := time.Now().Add(5 * time.Second)
	for len(b.results) > 0 && time.Now().Before(drainUntil) {
		time.Sleep(10 * time.Millisecond)
	}
	stopApply()
	<-applied
}

// OnServedChange registers f, called whenever what the connected workers
// serve or are ready for changes. Call it before Run.
func (b *Broker) OnServedChange(f func()) { b.servedChanged = f }

func (b *Broker) notifyServed() {
	if b.servedChanged != nil {
		b.servedChanged()
	}
}

// Served reports what the connected workers serve and are ready for, for
// the member table: a reaction nobody is ready for shows as parked.
func (b *Broker) Served() []store.Served {
	b.mu.Lock()
	defer b.mu.Unlock()
	agg := map[reactionKey]*store.Served{}
	var order []reactionKey
	for s := range b.sessions {
		if s.draining {
			continue
		}
		for rk := range s.serves {
			sv := agg[rk]
			if sv == nil {
				sv = &store.Served{Kind: rk.kind, Version: rk.version, Reaction: rk.reaction}
				agg[rk] = sv
				order = append(order, rk)
			}
			if why, not := s.notReady[rk]; not {
				sv.NotReady = why
				continue
			}
			sv.Workers++
			sv.Capacity += s.capacity
		}
	}
	for _, sv := range agg {
		if sv.Workers > 0 {
			sv.NotReady = ""
		}
	}
	out := make([]store.Served, 0, len(order))
	for _, rk := range order {
		out = append(out, *agg[rk])
	}
	return out
}

// Stats reports the connected workers and the tasks this broker holds per
// kind, for the metrics scrape.
func (b *Broker) Stats() metrics.BrokerStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := metrics.BrokerStats{InFlight: map[string]int{}}
	for sess := range b.sessions {
		if !sess.closed {
			s.Workers++
		}
	}
	for _, l := range b.leases {
		s.InFlight[l.key.kind]++
	}
	return s
}

func (b *Broker) wakeClaimer() {
	select {
	case b.claimWake <- struct{}{}:
	default:
	}
}

// releasePending gives back tasks claimed but never sent to a worker.
func (b *Broker) releasePending() {
	b.mu.Lock()
	var give []store.Lease
	for k, ls := range b.pending {
		for _, l := range ls {
			give = append(give, l.Lease)
			delete(b.leases, l.TaskID)
		}
		delete(b.pending, k)
	}
	b.mu.Unlock()
	b.giveBack(give, "unsent tasks")
}

// leaseLoop renews leases of attested and pending tasks, forgets leases of
// workers that vanished, and fails tasks that overran their deadline.
func (b *Broker) leaseLoop(ctx context.Context) {
	tick := time.NewTicker(b.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b.releaseStranded(ctx)
		now := time.Now()
		var renew []store.Renewal
		var overdue []*lease
		b.mu.Lock()
		for id, l := range b.leases {
			if !l.done && l.session != nil && now.Sub(l.attested) >= b.cfg.Lease {
				// No worker attested the task for a whole lease window
				// (the worker vanished, or lost it): stop renewing, so the
				// database lease runs out and the task is requeued.
				delete(b.leases, id)
				b.cfg.Records.Finish(l.rec, store.Outcome{}, store.RecordLost, "lease expired: the worker did not attest the task in time")
				if !l.session.closed {
					l.session.inflight--
					l.session.send(cancelMessage(l.Lease, "lease expired: the task was not attested in time"))
				}
				continue
			}
			// A running task's lease lasts one lease window past its last
			// attestation, so a dead worker's task is free then, not later;
			// tasks this broker itself holds get a full window from now.
			until := now.Add(b.cfg.Lease)
			if !l.done && l.session != nil {
				until = l.attested.Add(b.cfg.Lease)
			}
			renew = append(renew, store.Renewal{Lease: l.Lease, Until: until})
			if !l.done && l.session != nil && now.After(l.deadline.Add(b.cfg.DeadlineGrace)) {
				l.done = true
				l.session.inflight--
				overdue = append(overdue, l)
			}
		}
		b.mu.Unlock()
		if _, err := b.store.ExtendLeases(ctx, b.cfg.MemberID, renew); err != nil && ctx.Err() == nil {
			b.log.Warn("renewing leases failed", "leases", len(renew), "err", err)
		}
		for _, l := range overdue {
			b.failOverdue(l)
		}
		if len(overdue) > 0 {
			b.wakeClaimer()
		}
	}
}

func (b *Broker) failOverdue(l *lease) {
	msg := "the worker did not report a result before the task deadline"
	l.session.send(cancelMessage(l.Lease, "task deadline exceeded"))
	b.results <- &result{
		lease: l, session: l.session,
		out: store.Outcome{Lease: l.Lease, Actor: "system", Failed: true, Message: msg},
	}
}

func protoLease(l store.Lease) *convergev1.Lease {
	return &convergev1.Lease{TaskId: l.TaskID, Epoch: l.Epoch, Generation: l.Generation}
}

func cancelMessage(l store.Lease, reason string) *convergev1.ServerMessage {
	return &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Cancel{Cancel: &convergev1.Cancel{
		Lease: protoLease(l), Reason: reason,
	}}}
}

// eligible reports whether s may get new tasks: connected, not draining,
// with free slots, and heard from within a lease. Callers hold b.mu.
func (b *Broker) eligible(s *session, now time.Time) bool {
	return !s.draining && !s.closed && s.capacity > s.inflight && now.Sub(s.heard) < b.cfg.Lease
}
