// Package reactor emits reactor deliveries. It reads the change feed from
// a cursor kept in the database, matches every change against the
// reactor bindings, and queues one task per (binding, resource,
// transition) under the binding's reactor kind. It never waits on a
// worker: a slow or absent reactor only lets its own tasks queue up, and
// every other reactor's deliveries keep flowing.
//
// Any number of replicas run an emitter; the cursor row is locked with
// SKIP LOCKED for each batch, so one of them emits at a time and the
// others skip. Queueing a batch and advancing the cursor commit together:
// a crash neither loses a batch nor queues it twice.
package reactor

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// MaxBatch bounds the changes read in one transaction.
const MaxBatch = 1000

// Config tunes the emitter. Zero fields take the defaults.
type Config struct {
	// PollInterval is how often the feed is checked without a wake-up
	// (default 1 s).
	PollInterval time.Duration
	// CountInterval is how often the number of bindings is re-read
	// without a kinds wake-up (default 5 s). With no binding the emitter
	// reads nothing else.
	CountInterval time.Duration
	// MinGap is the least time between two drains started by wake-ups,
	// so a busy feed is read in batches rather than change by change
	// (default 50 ms).
	MinGap time.Duration
	// BatchSize is the changes read per transaction (1..MaxBatch,
	// default MaxBatch).
	BatchSize int
}

// Emitter queues reactor deliveries.
type Emitter struct {
	cfg     Config
	store   *store.Store
	bus     *notify.Bus
	log     *slog.Logger
	started atomic.Bool
	// loops and rounds count passes of Run and emitter transactions, for
	// tests of idleness.
	loops, rounds atomic.Int64

	mu     sync.Mutex
	warned map[string]int64 // binding name -> revision reported as broken
}

// New returns an emitter; Run starts it.
func New(cfg Config, st *store.Store, bus *notify.Bus, log *slog.Logger) *Emitter {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.CountInterval <= 0 {
		cfg.CountInterval = 5 * time.Second
	}
	if cfg.MinGap <= 0 {
		cfg.MinGap = 50 * time.Millisecond
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > MaxBatch {
		cfg.BatchSize = MaxBatch
	}
	return &Emitter{cfg: cfg, store: st, bus: bus, log: log, warned: map[string]int64{}}
}

// Name implements service.Service.
func (*Emitter) Name() string { return "reactor emitter" }

// Run emits until ctx ends: on every change wake-up and every poll, while
// any binding exists. Errors back off, doubling up to 5 s.
func (e *Emitter) Run(ctx context.Context) {
	changes, stopChanges := e.bus.Subscribe(notify.Changes)
	defer stopChanges()
	kinds, stopKinds := e.bus.Subscribe(notify.Kinds)
	defer stopKinds()
	poll := time.NewTicker(e.cfg.PollInterval)
	defer poll.Stop()
	bindings, counted := 0, time.Time{}
	var backoff time.Duration
	for {
		e.loops.Add(1)
		err := e.start(ctx)
		if err == nil && (counted.IsZero() || time.Since(counted) >= e.cfg.CountInterval) {
			var n int
			if n, err = e.store.CountReactorBindings(ctx); err == nil {
				bindings, counted = n, time.Now()
			}
		}
		if err == nil && bindings > 0 {
			_, err = e.Drain(ctx)
		}
		wait := time.Duration(0)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			e.log.Warn("reactor emitter failed; retrying", "err", err, "in", backoff)
			wait = backoff
		} else {
			backoff = 0
			select {
			case <-ctx.Done():
				return
			case <-changes:
				wait = e.cfg.MinGap
			case <-kinds:
				counted = time.Time{}
			case <-poll.C:
			}
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}
}

// start creates the feed cursor once per emitter: at the end of the feed
// as it is when the process starts, so bindings applied later see every
// change made after them.
func (e *Emitter) start(ctx context.Context) error {
	if e.started.Load() {
		return nil
	}
	if err := e.store.StartReactorFeed(ctx); err != nil {
		return err
	}
	e.started.Store(true)
	return nil
}

// Drain emits batches until the feed has nothing more to read now, or
// another replica holds the cursor, and reports how many deliveries it
// queued.
func (e *Emitter) Drain(ctx context.Context) (int, error) {
	if err := e.start(ctx); err != nil {
		return 0, err
	}
	queued := 0
	for {
		pending, err := e.store.ReactorFeedPending(ctx)
		if err != nil || !pending {
			return queued, err
		}
		e.rounds.Add(1)
		res, err := e.store.EmitReactorDeliveries(ctx, e.cfg.BatchSize, e.match)
		if err != nil {
			return queued, err
		}
		if res.Overtaken {
			e.log.Warn("the change feed was pruned past the reactor emitter's cursor; transitions recorded in between were not delivered",
				"cursor", res.Lost.String(), "hold", store.ReactorHold.String())
		}
		if res.Queued > 0 {
			queued += res.Queued
			e.bus.Publish(notify.Tasks)
		}
		if res.Skipped || !res.More {
			return queued, nil
		}
	}
}

// match is the store.Matcher: it compiles the bindings read in the
// batch's transaction, so edits apply from the next batch on.
func (e *Emitter) match(bs []store.ReactorBinding, changes []store.WatchedChange) ([]store.Delivery, error) {
	compiled, bad := compile(bs)
	for _, err := range bad {
		e.warnOnce(err)
	}
	return match(compiled, changes)
}

func (e *Emitter) warnOnce(err *bindingError) {
	e.mu.Lock()
	seen := e.warned[err.name] == err.revision
	e.warned[err.name] = err.revision
	e.mu.Unlock()
	if !seen {
		e.log.Error("reactor binding matches nothing", "binding", err.name, "err", err.err)
	}
}
