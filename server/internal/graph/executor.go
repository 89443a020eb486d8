// Package graph runs the work the server does itself on the resource
// graph: rolling children up into their composite, opening the gate of a
// dependent once its dependencies are synced (writing the values that
// flow along its edges into its spec), and ordering teardown so that
// dependents and children go before what they need. The database wakes
// this work in the same transaction as the change that needs it.
package graph

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// Config tunes the executor.
type Config struct {
	MemberID string
	// Lease bounds how long a claimed task may take before another
	// replica takes it over.
	Lease time.Duration
	// PollInterval is the failsafe when no wake-up arrives.
	PollInterval time.Duration
	// Parallel is how many tasks run at once.
	Parallel int
}

// Executor runs rollups, gates and teardowns.
type Executor struct {
	cfg   Config
	store *store.Store
	kinds *kinds.Registry
	bus   *notify.Bus
	flows *flow.Cache
	log   *slog.Logger
}

// New returns an executor.
func New(cfg Config, st *store.Store, reg *kinds.Registry, bus *notify.Bus, log *slog.Logger) *Executor {
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 4
	}
	return &Executor{cfg: cfg, store: st, kinds: reg, bus: bus, flows: flow.NewCache(10000), log: log}
}

// batch is how many tasks one claim takes. A claim and each of the gate's
// statements cost mostly per statement, and the loop runs one batch at a
// time, so the batch bounds how fast a wave of dependents opens: with 512
// the thousand VPCs of a landing zone whose accounts just turned Ready
// open in two or three batches, not sixteen. (A second loop claiming
// while the first runs measured no faster on two cores.)
const batch = 512

// Name implements service.Service.
func (*Executor) Name() string { return "graph executor" }

// Run claims and runs internal tasks until ctx ends.
func (x *Executor) Run(ctx context.Context) {
	wake, stop := x.bus.Subscribe(notify.Tasks)
	defer stop()
	poll := time.NewTicker(x.cfg.PollInterval)
	defer poll.Stop()
	for {
		for ctx.Err() == nil {
			tasks, err := x.store.ClaimInternal(ctx, x.cfg.MemberID, x.cfg.Lease, batch)
			if err != nil {
				if ctx.Err() == nil {
					x.log.Warn("claiming graph tasks failed", "err", err)
				}
				break
			}
			if len(tasks) == 0 {
				break
			}
			x.runAll(ctx, tasks)
			x.bus.Publish(notify.Changes)
			// What these tasks changed may have woken more.
			x.bus.Publish(notify.Tasks)
			if len(tasks) < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// runAll runs tasks: gates together in one transaction, rollups and
// teardowns Parallel at a time.
func (x *Executor) runAll(ctx context.Context, tasks []store.InternalTask) {
	var gates []store.InternalTask
	sem := make(chan struct{}, x.cfg.Parallel)
	var wg sync.WaitGroup
	for _, t := range tasks {
		if t.Trigger == trigger.Gate {
			gates = append(gates, t)
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			tctx, span := startSpan(ctx, t.Trigger+" "+t.Kind, []store.InternalTask{t})
			x.settle(ctx, []store.InternalTask{t}, x.run(tctx, t))
			endSpan(span)
		}()
	}
	if len(gates) > 0 {
		gctx, span := startSpan(ctx, "gate", gates)
		_, err := x.store.Gates(gctx, gates, x.decide)
		endSpan(span)
		x.settle(ctx, gates, err)
	}
	wg.Wait()
}

// settle gives tasks back to run again when they failed.
func (x *Executor) settle(ctx context.Context, ts []store.InternalTask, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	x.log.Warn("graph tasks failed; they run again", "trigger", ts[0].Trigger, "tasks", len(ts), "err", err)
	release, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases := make([]store.Lease, len(ts))
	for i, t := range ts {
		leases[i] = t.Lease
	}
	_ = x.store.ReleaseLeases(release, leases)
}

func (x *Executor) run(ctx context.Context, t store.InternalTask) error {
	switch t.Trigger {
	case trigger.Rollup:
		settled := false
		if e := x.kinds.Get(t.Kind, t.Version); e != nil {
			settled = e.SettledReaction()
		}
		return x.store.Rollup(ctx, t, settled)
	case trigger.Teardown:
		_, err := x.store.Teardown(ctx, t, func(kind string, version int32) store.TeardownPolicy {
			if e := x.kinds.Get(kind, version); e != nil {
				return e.Teardown()
			}
			return store.TeardownPolicy{}
		})
		return err
	}
	return fmt.Errorf("unknown graph task trigger %q", t.Trigger)
}

// decide is the gate (Decide) with this executor's flows and kinds.
func (x *Executor) decide(in store.GateInput) store.GateDecision {
	return Decide(x.flows, x.kinds, in)
}
