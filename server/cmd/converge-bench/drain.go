package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

// W7, backlog drain (perf-anchors §5.3): N leaves applied with no worker
// connected, then the worker started. A queue that slows as it drains
// (dead tuples the claim must step over) shows as a last decile slower
// than the first. The variant holds an idle-in-transaction session with
// an xid for the first part of the drain, so vacuum can remove nothing
// the drain deletes until it is released.

type drainResult struct {
	n         int
	hold      time.Duration // how long the xid was held; 0: not at all
	deciles   []float64     // completions per second in each tenth of the completions
	rate      float64       // n ÷ (last Ready − first Ready)
	rssQueued float64       // converge's RSS in MiB with the backlog queued
	deadTasks int64         // n_dead_tup of tasks when the drain ended
	// With a hold: whether it was released before the drain ended, and
	// how long after the release the completion rate was back at 90% of
	// the first decile's (recovered false: not before the drain ended).
	released  bool
	recovered bool
	recovery  time.Duration
}

// ratio is the last decile's rate over the first's; NaN when the run has
// no deciles.
func (r drainResult) ratio() float64 {
	if len(r.deciles) < 10 || r.deciles[0] == 0 {
		return math.NaN()
	}
	return r.deciles[9] / r.deciles[0]
}

func runDrain(ctx context.Context, o options, cluster *devpg.Cluster, run int, hold time.Duration) (drainResult, error) {
	res := drainResult{n: o.resources, hold: hold}
	db := fmt.Sprintf("drain_%d", run)
	if hold > 0 {
		db = fmt.Sprintf("drain_xmin_%d", run)
	}
	st, err := startStack(ctx, o, cluster, db, "")
	if err != nil {
		return res, err
	}
	defer st.close()
	if _, err := st.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: benchManifest()}); err != nil {
		return res, fmt.Errorf("applying the bench kind: %w", err)
	}
	if err := submit(ctx, st.client, o); err != nil {
		return res, fmt.Errorf("W7 applying the backlog: %w", err)
	}
	var queued int
	if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE kind = $1`, benchKind).Scan(&queued); err != nil {
		return res, err
	}
	if queued != o.resources {
		return res, fmt.Errorf("W7: %d tasks queued for %d leaves applied with no worker", queued, o.resources)
	}
	res.rssQueued = currentRSS(st.server.pid())
	if _, err := st.pool.Exec(ctx, `CHECKPOINT`); err != nil {
		return res, err
	}

	var holder *pgx.Conn
	if hold > 0 {
		if holder, err = holdXmin(ctx, cluster.URL(db)); err != nil {
			return res, err
		}
		defer holder.Close(context.WithoutCancel(ctx))
	}
	if err := st.startWorkers(o.workerBin, "-kinds", benchKind+":1:reconcile", "-capacity", strconv.Itoa(o.capacity)); err != nil {
		return res, err
	}
	drained := make(chan error, 1)
	go func() { drained <- waitReady(ctx, st.pool, o.resources, time.Hour) }()
	var releasedAt time.Time
	if hold > 0 {
		select {
		case err := <-drained:
			// The drain ended under the hold; the channel is refilled
			// so the wait below sees it.
			drained <- err
		case <-time.After(hold):
			if releasedAt, err = release(ctx, holder, st.pool); err != nil {
				return res, err
			}
			res.released = true
		}
	}
	if err := <-drained; err != nil {
		return res, fmt.Errorf("W7: %w (worker log: %s)", err, st.worker.tail())
	}
	if hold > 0 && !res.released {
		if _, err := release(ctx, holder, st.pool); err != nil {
			return res, err
		}
	}
	if err := st.pool.QueryRow(ctx, `SELECT n_dead_tup FROM pg_stat_user_tables WHERE relname = 'tasks'`).Scan(&res.deadTasks); err != nil {
		return res, err
	}
	return res, drainFigures(ctx, st.pool, releasedAt, &res)
}

// holdXmin opens a session that takes an xid and stays idle in its
// transaction, holding back the horizon below which vacuum may remove
// rows.
func holdXmin(ctx context.Context, url string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("W7 xmin holder: %w", err)
	}
	if _, err := conn.Exec(ctx, `BEGIN`); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("W7 xmin holder: BEGIN: %w", err)
	}
	var xid int64
	if err := conn.QueryRow(ctx, `SELECT txid_current()`).Scan(&xid); err != nil {
		conn.Close(ctx)
		return nil, fmt.Errorf("W7 xmin holder: txid_current(): %w", err)
	}
	logf("drain: xid %d held idle in transaction", xid)
	return conn, nil
}

// release ends the holder's transaction and returns when, by the
// database's clock.
func release(ctx context.Context, holder *pgx.Conn, pool *pgxpool.Pool) (time.Time, error) {
	if _, err := holder.Exec(ctx, `ROLLBACK`); err != nil {
		return time.Time{}, fmt.Errorf("W7 releasing the xmin holder: %w", err)
	}
	var at time.Time
	err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at)
	return at, err
}

// drainFigures reads when each leaf first became Ready, as the database
// stamped it, and splits the completions into deciles.
func drainFigures(ctx context.Context, pool *pgxpool.Pool, releasedAt time.Time, res *drainResult) error {
	// Results are applied in batches, one transaction each, and
	// clock_timestamp() moves by microseconds within one: a completion
	// counts when its transaction does (its last stamp).
	rows, err := pool.Query(ctx, `
		WITH first AS (
		    SELECT DISTINCT ON (resource_id) xid, at FROM changes
		    WHERE kind = $1 AND phase = 'Ready' ORDER BY resource_id, at
		)
		SELECT extract(epoch FROM max(at))::float8, count(*) FROM first GROUP BY xid ORDER BY 1`, benchKind)
	if err != nil {
		return err
	}
	defer rows.Close()
	var c curve
	var done int
	for rows.Next() {
		var at float64
		var n int
		if err := rows.Scan(&at, &n); err != nil {
			return fmt.Errorf("W7 Ready times: %w", err)
		}
		done += n
		c = append(c, curvePoint{at: at, done: done})
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("W7 Ready times: %w", err)
	}
	if done != res.n {
		return fmt.Errorf("W7: %d of %d leaves have a Ready change", done, res.n)
	}
	if res.deciles = c.deciles(); res.deciles == nil {
		logf("W7: the first result batch alone completed %d of %d leaves, more than a tenth: this run has no deciles (raise -resources)", c[0].done, done)
	}
	if span := c.span(); span > 0 {
		res.rate = float64(done) / span
	}
	if res.released && len(res.deciles) > 0 {
		res.recovery, res.recovered = c.recoveryAfter(float64(releasedAt.UnixMicro())/1e6, 0.9*res.deciles[0])
	}
	return nil
}

// curve is completions over time: one point per transaction that applied
// results, in time order, with the running total; between points it is
// taken as linear.
type curve []curvePoint

type curvePoint struct {
	at   float64 // epoch seconds
	done int     // completions up to and including this point
}

func (c curve) span() float64 {
	if len(c) == 0 {
		return 0
	}
	return c[len(c)-1].at - c[0].at
}

// timeOf is when the curve reached x completions; the first point is the
// origin, so x below its total maps to its time.
func (c curve) timeOf(x float64) float64 {
	for k, p := range c {
		if float64(p.done) >= x {
			if k == 0 {
				return p.at
			}
			prev := c[k-1]
			return prev.at + (p.at-prev.at)*(x-float64(prev.done))/float64(p.done-prev.done)
		}
	}
	return c[len(c)-1].at
}

// doneAt is how many completions the curve holds at time t.
func (c curve) doneAt(t float64) float64 {
	for k, p := range c {
		if p.at >= t {
			if k == 0 || p.at == c[k-1].at {
				return float64(p.done)
			}
			prev := c[k-1]
			return float64(prev.done) + float64(p.done-prev.done)*(t-prev.at)/(p.at-prev.at)
		}
	}
	return float64(c[len(c)-1].done)
}

// deciles returns the completions per second of each tenth of the
// completions. The first point is the origin: the first tenth counts
// only the completions after it, and a first point holding a tenth or
// more leaves no deciles (nil).
func (c curve) deciles() []float64 {
	if len(c) < 2 {
		return nil
	}
	n := float64(c[len(c)-1].done)
	if float64(c[0].done) >= n/10 {
		return nil
	}
	out := make([]float64, 10)
	for i := range out {
		from, to := c.timeOf(float64(i)*n/10), c.timeOf(float64(i+1)*n/10)
		count := n / 10
		if i == 0 {
			from, count = c[0].at, n/10-float64(c[0].done)
		}
		if to > from {
			out[i] = count / (to - from)
		}
	}
	return out
}

// recoveryAfter is how long after release the completions over the next
// second first reach target; false when no full second of the drain after
// the release does.
func (c curve) recoveryAfter(release, target float64) (time.Duration, bool) {
	end := c[len(c)-1].at
	for _, p := range c {
		if p.at < release || p.at+1 > end {
			continue
		}
		if c.doneAt(p.at+1)-float64(p.done) >= target {
			return time.Duration((p.at - release) * float64(time.Second)), true
		}
	}
	return 0, false
}
