package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The wait-event histogram of perf-anchors §5.1: what PostgreSQL's active
// backends of the bench database wait on during the load, sampled from
// pg_stat_activity. A backend that is active and waits on nothing is on
// the CPU (or about to be), counted as "CPU".

const (
	waitInterval = 100 * time.Millisecond
	waitTopRows  = 8
	// waitLockObject is the class NOTIFY's commit-time queue lock shows
	// as; its share is the protocol's NOTIFY-health figure.
	waitLockObject = "Lock:object"
)

// waitSamples counts the active backends seen in each wait-event class
// over a run's samples.
type waitSamples struct {
	counts map[string]int
	total  int // backend observations, the sum of counts
	polls  int // times pg_stat_activity was read
}

func (s *waitSamples) add(class string) {
	if s.counts == nil {
		s.counts = map[string]int{}
	}
	s.counts[class]++
	s.total++
}

// share is the percentage of the observations in class; NaN-free: 0 with
// no observations.
func (s waitSamples) share(class string) float64 {
	if s.total == 0 {
		return 0
	}
	return 100 * float64(s.counts[class]) / float64(s.total)
}

// waitRow is one row of the report: a class and its share in each run
// that has samples.
type waitRow struct {
	class  string
	shares []float64
}

// waitRows picks the at most top classes with the highest median share
// over the runs (ties by name), then Lock:object if it is not among them,
// so the NOTIFY-health figure is always reported. Runs without samples are
// left out; with none at all there are no rows.
func waitRows(runs []waitSamples, top int) []waitRow {
	var sampled []waitSamples
	classes := map[string]bool{}
	for _, r := range runs {
		if r.total == 0 {
			continue
		}
		sampled = append(sampled, r)
		for c := range r.counts {
			classes[c] = true
		}
	}
	if len(sampled) == 0 {
		return nil
	}
	rowOf := func(class string) waitRow {
		row := waitRow{class: class}
		for _, r := range sampled {
			row.shares = append(row.shares, r.share(class))
		}
		return row
	}
	var rows []waitRow
	for c := range classes {
		rows = append(rows, rowOf(c))
	}
	sort.Slice(rows, func(i, j int) bool {
		mi, _, _ := median(rows[i].shares)
		mj, _, _ := median(rows[j].shares)
		if mi != mj {
			return mi > mj
		}
		return rows[i].class < rows[j].class
	})
	rows = rows[:min(len(rows), top)]
	for _, r := range rows {
		if r.class == waitLockObject {
			return rows
		}
	}
	return append(rows, rowOf(waitLockObject))
}

// reportWaits prints the histogram's rows into the W1 table.
func reportWaits(w io.Writer, runs []waitSamples) {
	polls := column(runs, func(r waitSamples) float64 { return float64(r.polls) })
	if m, _, _ := median(polls); m == 0 {
		return
	}
	medianRow(w, fmt.Sprintf("Wait-event samples (pg_stat_activity every %s, active backends)", waitInterval), column(runs, func(r waitSamples) float64 { return float64(r.total) }), "", 0)
	for _, row := range waitRows(runs, waitTopRows) {
		name := "Waits: " + row.class
		if row.class == waitLockObject {
			name += " (NOTIFY health)"
		}
		medianRow(w, name, row.shares, "%", 1)
	}
}

// waitSampler polls pg_stat_activity on one connection of pool until
// stopped.
type waitSampler struct {
	once sync.Once
	stop chan struct{}
	done chan struct{}
	res  waitSamples
	err  error
}

// startWaitSampler takes one connection from pool and samples every
// waitInterval until stop. Its own statements are kept out of
// pg_stat_statements so the statement counts of the load stay the load's.
func startWaitSampler(ctx context.Context, pool *pgxpool.Pool) (*waitSampler, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("wait-event sampler: acquiring a connection: %w", err)
	}
	if _, err := conn.Exec(ctx, `SET pg_stat_statements.track = 'none'`); err != nil {
		conn.Release()
		return nil, fmt.Errorf("wait-event sampler: SET pg_stat_statements.track: %w", err)
	}
	s := &waitSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer func() {
			if _, err := conn.Exec(context.WithoutCancel(ctx), `RESET pg_stat_statements.track`); err != nil {
				// Not returned to the pool with the setting still on.
				_ = conn.Conn().Close(context.WithoutCancel(ctx))
			}
			conn.Release()
		}()
		tick := time.NewTicker(waitInterval)
		defer tick.Stop()
		for {
			if s.err = s.sample(ctx, conn); s.err != nil {
				return
			}
			select {
			case <-s.stop:
				return
			case <-ctx.Done():
				s.err = ctx.Err()
				return
			case <-tick.C:
			}
		}
	}()
	return s, nil
}

func (s *waitSampler) sample(ctx context.Context, conn *pgxpool.Conn) error {
	rows, err := conn.Query(ctx, `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`)
	if err != nil {
		return fmt.Errorf("wait-event sampler: pg_stat_activity: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var class string
		if err := rows.Scan(&class); err != nil {
			return fmt.Errorf("wait-event sampler: pg_stat_activity: %w", err)
		}
		s.res.add(class)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("wait-event sampler: pg_stat_activity: %w", err)
	}
	s.res.polls++
	return nil
}

// finish stops the sampler and returns its counts; later calls return
// the same.
func (s *waitSampler) finish() (waitSamples, error) {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return s.res, s.err
}
