package readroute

import (
	"context"
	"time"
)

// Sampling: the primary's position every sampleInterval, the replica's
// then and whenever a waiting read asks (at most every kickSpacing).
const (
	sampleInterval = 100 * time.Millisecond
	kickSpacing    = 2 * time.Millisecond
	sampleTimeout  = time.Second
	// ringSpacing thins the primary's positions that writes add to the ring.
	ringSpacing = 10 * time.Millisecond
)

// Name implements service.Service.
func (r *Router) Name() string { return "read replica sampler" }

// Run samples the replica until ctx ends. Without a replica it returns at
// once.
func (r *Router) Run(ctx context.Context) {
	if r == nil || r.cfg.Replica == nil {
		return
	}
	tick := time.NewTicker(sampleInterval)
	defer tick.Stop()
	primaryDue := true
	for {
		r.sample(ctx, primaryDue)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			primaryDue = true
		case <-r.kick:
			primaryDue = false
			select {
			case <-ctx.Done():
				return
			case <-time.After(kickSpacing):
			}
		}
	}
}

// sample reads the replica's replay position (and, when due, the
// primary's position first) and updates what routing decides on.
func (r *Router) sample(ctx context.Context, primaryDue bool) {
	if primaryDue {
		qctx, cancel := context.WithTimeout(ctx, sampleTimeout)
		_, err := r.PrimaryAfter(qctx, time.Now())
		cancel()
		if err != nil && ctx.Err() == nil {
			r.cfg.Log.Debug("read replica sampler: primary position", "err", err)
		}
	}
	qctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	var recovering bool
	var replay *int64
	err := r.cfg.Replica.QueryRow(qctx, `SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint`).
		Scan(&recovering, &replay)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	switch {
	case err != nil:
		r.setDown("unreachable: " + err.Error())
	case !recovering || replay == nil:
		r.setDown("not a standby: pg_is_in_recovery() is false (promoted, or --read-database-url names a primary)")
	default:
		r.replayedTo(uint64(*replay), now)
	}
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// replayedTo records a sample that found the replica replayed to lsn.
func (r *Router) replayedTo(lsn uint64, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.up {
		r.cfg.Log.Info("read replica available: it serves reads again", "was", r.downWhy)
	}
	r.up, r.downWhy, r.replayed = true, "", lsn
	r.trimRing(now)
	r.covered = time.Time{}
	for i := len(r.ring) - 1; i >= 0; i-- {
		if r.ring[i].lsn <= lsn {
			r.covered = r.ring[i].at
			break
		}
	}
	r.lag, r.lagBytes = 0, 0
	if n := len(r.ring); n > 0 && r.ring[n-1].lsn > lsn {
		r.lagBytes = r.ring[n-1].lsn - lsn
		switch {
		case !r.covered.IsZero():
			r.lag = now.Sub(r.covered)
		default:
			// Behind every position kept: at least as old as the oldest.
			r.lag = now.Sub(r.ring[0].at)
		}
	}
}

// trimRing drops positions older than the staleness bound needs, keeping
// the newest of those so a lagging replica's age stays known.
func (r *Router) trimRing(now time.Time) {
	horizon := now.Add(-r.cfg.MaxLag - time.Second)
	drop := 0
	for drop+1 < len(r.ring) && r.ring[drop+1].at.Before(horizon) {
		drop++
	}
	r.ring = append(r.ring[:0], r.ring[drop:]...)
}

// Stats is what the metrics report of the replica.
type Stats struct {
	// Up: the last sample reached the replica and found it in recovery.
	Up bool
	// Lag is how far behind the primary the replica's replay was at the
	// last sample, in time (to within the sample interval) and in WAL
	// bytes.
	Lag      time.Duration
	LagBytes uint64
	// Reads counts reads by where they ran and why there.
	Reads []ReadCount
}

// ReadCount is the number of reads with one source and reason.
type ReadCount struct {
	Source, Reason string
	N              int64
}

// Stats reports the replica's state and the reads routed so far.
func (r *Router) Stats() Stats {
	r.mu.Lock()
	st := Stats{Up: r.up, Lag: r.lag, LagBytes: r.lagBytes}
	r.mu.Unlock()
	for s := range numSources {
		for why := range numReasons {
			if n := r.counts[s][why].Load(); n > 0 {
				st.Reads = append(st.Reads, ReadCount{Source: [numSources]string{"replica", "primary"}[s], Reason: reasonNames[why], N: n})
			}
		}
	}
	return st
}
