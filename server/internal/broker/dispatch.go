package broker

import (
	"context"
	"encoding/json"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// claimLoop claims work whenever it may be there: on a wake-up (new work,
// freed capacity, a kind change), when a backoff ends, and on the
// failsafe poll.
func (b *Broker) claimLoop(ctx context.Context) {
	tasks, stopTasks := b.bus.Subscribe(notify.Tasks)
	defer stopTasks()
	kindsChanged, stopKinds := b.kinds.Subscribe()
	defer stopKinds()
	poll := time.NewTicker(b.cfg.PollInterval)
	defer poll.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	var nextRetry time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.claimWake:
		case <-tasks:
		case <-kindsChanged:
		case <-poll.C:
		case <-retry.C:
			nextRetry = time.Time{}
		case at := <-b.retryAt:
			if nextRetry.IsZero() || at.Before(nextRetry) {
				nextRetry = at
				retry.Reset(time.Until(at) + time.Millisecond)
			}
			continue
		}
		b.claimRound(ctx)
	}
}

// claimRound claims until no (kind, version, trigger) with free worker
// capacity has more ready work.
func (b *Broker) claimRound(ctx context.Context) {
	for ctx.Err() == nil {
		wants := b.wants()
		if len(wants) == 0 {
			return
		}
		claimed, err := b.store.Claim(ctx, b.cfg.MemberID, b.cfg.Lease, wants)
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("claiming tasks failed; retrying on the next poll", "err", err)
			}
			return
		}
		got := map[triggerKey]int{}
		gotKind := map[kindKey]int{}
		for _, c := range claimed {
			got[triggerKey{c.Kind, c.Version, c.Trigger}]++
			gotKind[kindKey{c.Kind, c.Version}]++
		}
		// Counted before delivery, so a worker never holds a task the
		// claims counter has not seen yet.
		for k, n := range got {
			b.cfg.Metrics.Claimed(k.kind, n)
		}
		b.refreshConfigsFor(ctx, claimed)
		b.deliver(claimed)
		if !fullClaim(wants, got, gotKind) {
			return
		}
	}
}

// fullClaim reports whether some want got all it asked for, by trigger or
// by kind version: there may be more ready work for the capacity left.
func fullClaim(wants []store.Want, got map[triggerKey]int, gotKind map[kindKey]int) bool {
	for _, w := range wants {
		if got[triggerKey{w.Kind, w.Version, w.Trigger}] == w.N || gotKind[kindKey{w.Kind, w.Version}] == w.KindN {
			return true
		}
	}
	return false
}

// wants computes, per (kind, version, trigger), how many tasks the
// connected workers ready for it can take now, and per kind version how
// many they can take of all its triggers together (a worker's free slots
// count once per kind version it serves, however many triggers its
// reactions run). Reactions a worker reported not ready count for nothing:
// their work stays queued, parked.
func (b *Broker) wants() []store.Want {
	b.mu.Lock()
	defer b.mu.Unlock()
	free := map[triggerKey]int{}
	kindFree := map[kindKey]int{}
	caps := map[kindKey]int32{}
	var order []triggerKey
	now := time.Now()
	for s := range b.sessions {
		if !b.eligible(s, now) {
			continue
		}
		slots := s.capacity - s.inflight
		counted := map[kindKey]bool{}
		for rk := range s.serves {
			if !s.ready(rk) {
				continue
			}
			e := b.kinds.Get(rk.kind, rk.version)
			if e == nil {
				continue
			}
			kk := kindKey{rk.kind, rk.version}
			for _, trig := range e.TriggersOf(rk.reaction) {
				k := triggerKey{rk.kind, rk.version, trig}
				if _, seen := free[k]; !seen {
					order = append(order, k)
					caps[kk] = e.MaxInflight()
				}
				free[k] += slots
				if !counted[kk] {
					counted[kk] = true
					kindFree[kk] += slots
				}
			}
		}
	}
	pendingKind := map[kindKey]int{}
	for k, ls := range b.pending {
		pendingKind[kindKey{k.kind, k.version}] += len(ls)
	}
	var wants []store.Want
	for _, k := range order {
		kk := kindKey{k.kind, k.version}
		n := min(free[k]-len(b.pending[k]), b.cfg.MaxClaim)
		kindN := min(kindFree[kk]-pendingKind[kk], b.cfg.MaxClaim)
		if n > 0 && kindN > 0 {
			w := store.Want{Kind: k.kind, Version: k.version, Trigger: k.trigger, N: min(n, kindN), KindN: kindN, MaxInflight: caps[kk]}
			if b.cfg.Tile != nil {
				w.ShardLo, w.ShardHi = b.cfg.Tile(k.kind, k.version)
			}
			wants = append(wants, w)
		}
	}
	return wants
}

// refreshConfigsFor reloads the kinds registry when a claimed task's
// resource names a provider config the registry has not seen: it was
// written a moment ago (a resource can only name a config that exists),
// and the registry would notice only at its next poll, after the task went
// out with the default config alone.
func (b *Broker) refreshConfigsFor(ctx context.Context, claimed []store.Claimed) {
	for _, c := range claimed {
		if c.ProviderConfig != "" && !b.kinds.HasConfig(c.Kind, c.Version, c.ProviderConfig) {
			if err := b.kinds.Refresh(ctx); err != nil && ctx.Err() == nil {
				b.log.Warn("reloading kinds for a new provider config failed; the task gets the default config", "err", err)
			}
			return
		}
	}
}

// deliver turns claimed tasks into leases and sends each to a worker with
// a free slot, or parks it until a slot frees.
func (b *Broker) deliver(claimed []store.Claimed) {
	if len(claimed) == 0 {
		return
	}
	now := time.Now()
	var giveBack []store.Lease
	// The leases are built before b.mu is taken: building a task (and
	// opening its sealed values) needs nothing the lock guards.
	leases := make([]*lease, 0, len(claimed))
	for _, c := range claimed {
		k := triggerKey{c.Kind, c.Version, c.Trigger}
		e := b.kinds.Get(c.Kind, c.Version)
		var reaction string
		var ok bool
		if e != nil {
			var r kinds.Reaction
			r, ok = e.Reaction(c.Trigger)
			reaction = r.Name
		}
		if !ok {
			// The kind changed under the claim: nobody serves this now.
			giveBack = append(giveBack, c.Lease)
			continue
		}
		deadline := now.Add(e.TaskDeadline())
		task, err := b.taskOf(e, c, reaction, deadline)
		if err != nil {
			// Unreadable stored payload: give it back; it is reported once
			// per claim rather than handed to a worker half-formed.
			b.log.Error("a queued task cannot be sent", "task", c.TaskID, "trigger", c.Trigger, "err", err)
			giveBack = append(giveBack, c.Lease)
			continue
		}
		// The record keeps the stored rows, sealed values sealed; the
		// worker gets them opened.
		rec := b.startRecord(c, task, now)
		if task, err = b.openTask(task); err != nil {
			b.log.Error("a queued task's secret values cannot be opened; it is given back", "task", c.TaskID, "trigger", c.Trigger, "err", err)
			giveBack = append(giveBack, c.Lease)
			continue
		}
		l := &lease{
			Lease: c.Lease, key: k, reaction: reaction, revision: e.Revision, deadline: deadline, namespace: c.Namespace,
			name: c.Name, attempt: c.Attempt, task: task, rec: rec,
			span: startTask(c, reaction),
		}
		task.Traceparent = spanParent(l.span)
		leases = append(leases, l)
	}
	b.mu.Lock()
	for _, l := range leases {
		b.leases[l.TaskID] = l
		if s := b.pickSession(l.key.kind, l.key.version, l.reaction); s != nil {
			b.dispatch(s, l, now)
		} else {
			b.pending[l.key] = append(b.pending[l.key], l)
		}
	}
	b.mu.Unlock()
	if len(giveBack) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.store.ReleaseLeases(ctx, giveBack); err != nil {
			b.log.Warn("could not release tasks of a changed kind", "err", err)
		}
	}
}

// pickSession returns the connected worker serving the reaction with the
// most free slots. Callers hold b.mu.
func (b *Broker) pickSession(kind string, version int32, reaction string) *session {
	var best *session
	bestFree := 0
	rk := reactionKey{kind, version, reaction}
	now := time.Now()
	for s := range b.sessions {
		if !s.ready(rk) || !b.eligible(s, now) {
			continue
		}
		if free := s.capacity - s.inflight; free > bestFree {
			best, bestFree = s, free
		}
	}
	return best
}

// dispatch sends a lease's task to s. Callers hold b.mu.
func (b *Broker) dispatch(s *session, l *lease, now time.Time) {
	s.inflight++
	l.session, l.attested = s, now
	l.rec.Dispatched(now, s.name, s.id)
	dispatched(l, s)
	task := l.task
	l.task = nil
	s.send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Tasks{Tasks: &convergev1.Tasks{Tasks: []*convergev1.Task{task}}}})
}

// rollupOf decodes a composite's stored child counts for a
// childrenSettled task.
func rollupOf(raw []byte) *convergev1.Rollup {
	if len(raw) == 0 {
		return nil
	}
	var c store.RollupCounts
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	return &convergev1.Rollup{Total: int32(c.Total), Ready: int32(c.Ready), Reconciling: int32(c.Reconciling),
		Degraded: int32(c.Degraded), Failed: int32(c.Failed), Deleting: int32(c.Deleting), Excluded: int32(c.Excluded)}
}
