// Package members keeps this replica's row in the members table fresh and
// keeps a view of the live replicas: which exist (so wakes go to them)
// and what their connected workers serve (so a parked kind can be told
// from a busy one).
package members

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// Interval is how often a replica renews its row; a replica silent for
// LiveWithin is considered gone.
const (
	Interval   = 2 * time.Second
	LiveWithin = 10 * time.Second
)

// Tracker heartbeats this replica and caches the live ones.
type Tracker struct {
	store  *store.Store
	bus    *notify.Bus
	self   store.Member
	served func() []store.Served
	log    *slog.Logger

	mu   sync.RWMutex
	live []store.Member
	// changed wakes Run for a heartbeat ahead of the tick.
	changed chan struct{}
}

// New returns a tracker for self. served, if not nil, reports what this
// replica's workers serve.
func New(st *store.Store, bus *notify.Bus, self store.Member, served func() []store.Served, log *slog.Logger) *Tracker {
	return &Tracker{store: st, bus: bus, self: self, served: served, log: log, changed: make(chan struct{}, 1)}
}

// Changed says what this replica serves changed (a worker connected, left
// or changed its readiness): the member row is rewritten at once rather
// than at the next tick, so this replica's API reports it without delay.
// Other replicas see it at their next heartbeat.
func (t *Tracker) Changed() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// Name implements service.Service.
func (*Tracker) Name() string { return "members tracker" }

// Run heartbeats until ctx ends, then removes this replica's row.
//
// A heartbeat is not cancelled with ctx but allowed to finish (bounded by
// Interval): a cancelled upsert can still commit in the database after
// the client gave up on it, and then bring back the row the delete below
// just removed, leaving the others to tile shards for a replica that is
// gone.
func (t *Tracker) Run(ctx context.Context) {
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	for {
		if ctx.Err() == nil {
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), Interval)
			t.beat(bctx)
			cancel()
		}
		select {
		case <-ctx.Done():
			c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = t.store.DeleteMember(c, t.self.ID)
			return
		case <-tick.C:
		case <-t.changed:
		}
	}
}

// Refresh heartbeats and reloads the live view now.
func (t *Tracker) Refresh(ctx context.Context) { t.beat(ctx) }

func (t *Tracker) beat(ctx context.Context) {
	m := t.self
	if t.served != nil {
		m.Served = t.served()
	}
	if err := t.store.HeartbeatMember(ctx, m); err != nil {
		if ctx.Err() == nil {
			t.log.Warn("member heartbeat failed", "err", err)
		}
		return
	}
	live, err := t.store.LiveMembers(ctx, LiveWithin)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.live = live
	t.mu.Unlock()
	others := 0
	for _, l := range live {
		if l.ID != t.self.ID {
			others++
		}
	}
	t.bus.SetPeers(others)
}

// Live returns the live replicas as of the last heartbeat.
func (t *Tracker) Live() []store.Member {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.live
}

// Serves reports whether any live replica has a connected worker serving
// the reaction.
func (t *Tracker) Serves(kind string, version int32, reaction string) (ready bool, notReady string) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, m := range t.live {
		for _, s := range m.Served {
			if s.Kind == kind && s.Version == version && s.Reaction == reaction {
				if s.Workers > 0 {
					return true, ""
				}
				notReady = s.NotReady
			}
		}
	}
	return false, notReady
}

// Tile returns this replica's tile [lo, hi) of the store.Shards shards for
// a kind version: the shards are split into contiguous, disjoint ranges
// among the live replicas whose workers serve the kind version, in the
// order of their ids, so every replica computes the same tiling from the
// same membership and a join or a departure re-tiles at the next
// heartbeat. A replica that does not see itself among them (its row is not
// written yet) takes every shard; tiles only order claims (see
// store.Want), so a stale view costs contention, never work.
func (t *Tracker) Tile(kind string, version int32) (lo, hi int16) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return tile(t.live, t.self.ID, kind, version)
}

func tile(live []store.Member, self, kind string, version int32) (lo, hi int16) {
	var ids []string
	for _, m := range live {
		if slices.ContainsFunc(m.Served, func(s store.Served) bool {
			return s.Kind == kind && s.Version == version && s.Workers > 0
		}) {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	i := slices.Index(ids, self)
	if i < 0 {
		return 0, store.Shards
	}
	n := len(ids)
	return int16(i * store.Shards / n), int16((i + 1) * store.Shards / n)
}

// TileOf returns member id's tile [lo, hi) of a kind version's shards in
// the membership live, by the same rule Tile applies to this replica.
func TileOf(live []store.Member, id, kind string, version int32) (lo, hi int16) {
	return tile(live, id, kind, version)
}
