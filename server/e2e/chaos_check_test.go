//go:build unix

package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// execution is one handler run a chaos worker logged.
type execution struct {
	name       string
	generation int64
	record     string // the record file, naming the worker process
	start, end time.Time
	// ended is false when the process died mid-run; end is then its
	// death, or the end of the test if it was never killed.
	ended bool
}

// execLine mirrors a line of the chaos worker's record file.
type execLine struct {
	Event      string `json:"event"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	At         int64  `json:"at"`
}

// readExecutions reads every worker process's record file. A start is
// paired with the next end of the same (resource, generation) in the same
// file.
func readExecutions(workers []*chaosWorker, testEnd time.Time) ([]execution, error) {
	var all []execution
	for _, w := range workers {
		for _, life := range w.lives {
			execs, err := readRecord(life, testEnd)
			if err != nil {
				return nil, err
			}
			all = append(all, execs...)
		}
	}
	return all, nil
}

func readRecord(life workerLife, testEnd time.Time) ([]execution, error) {
	f, err := os.Open(life.record)
	if err != nil {
		return nil, fmt.Errorf("chaos worker record: %w", err)
	}
	defer f.Close()
	type key struct {
		name string
		gen  int64
	}
	var execs []execution
	open := map[key][]int{} // indexes into execs of runs without an end yet
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var l execLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("chaos worker record %s line %d: %w", life.record, n, err)
		}
		k := key{l.Name, l.Generation}
		switch l.Event {
		case "start":
			open[k] = append(open[k], len(execs))
			execs = append(execs, execution{name: l.Name, generation: l.Generation, record: life.record, start: time.Unix(0, l.At)})
		case "end":
			if len(open[k]) == 0 {
				return nil, fmt.Errorf("chaos worker record %s line %d: an end of %s generation %d with no start", life.record, n, l.Name, l.Generation)
			}
			i := open[k][0]
			open[k] = open[k][1:]
			execs[i].end, execs[i].ended = time.Unix(0, l.At), true
		default:
			return nil, fmt.Errorf("chaos worker record %s line %d: event %q, want start or end", life.record, n, l.Event)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("chaos worker record %s: %w", life.record, err)
	}
	for i := range execs {
		if !execs[i].ended {
			execs[i].end = testEnd
			if !life.killed.IsZero() {
				execs[i].end = life.killed
			}
		}
	}
	return execs, nil
}

// duplicate is a (resource, generation) whose handler ran more than once.
type duplicate struct {
	name       string
	generation int64
	runs       []execution // by start time
	// excuses[i] is the fault that excuses run i+1: the one whose window
	// run i overlapped; nil if none did.
	excuses []*faultRecord
}

// allowed reports whether every rerun has a fault to excuse it.
func (d duplicate) allowed() bool {
	return !slices.Contains(d.excuses, nil)
}

func (d duplicate) String() string {
	s := fmt.Sprintf("%s generation %d ran %d times:", d.name, d.generation, len(d.runs))
	for i, r := range d.runs {
		end := "ended " + stamp(r.end)
		if !r.ended {
			end = "never ended (process gone " + stamp(r.end) + ")"
		}
		s += fmt.Sprintf(" [%d] %s started %s, %s", i+1, r.record, stamp(r.start), end)
		if i < len(d.excuses) {
			if f := d.excuses[i]; f != nil {
				s += fmt.Sprintf(" (rerun excused by fault %s at %s)", f.kind, stamp(f.start))
			} else {
				s += " (rerun NOT excused: this run overlapped no fault window)"
			}
		}
		s += ";"
	}
	return s
}

// findDuplicates groups executions by (resource, generation) and, for
// each one that ran more than once, looks for the fault excusing each
// rerun: the run before it must overlap a fault's window, from lease
// before the fault began to lease after the victim was back. Only such a
// run can have lost its lease, or its result, to the fault.
func findDuplicates(execs []execution, faults []faultRecord, lease time.Duration) []duplicate {
	type key struct {
		name string
		gen  int64
	}
	groups := map[key][]execution{}
	for _, e := range execs {
		k := key{e.name, e.generation}
		groups[k] = append(groups[k], e)
	}
	var out []duplicate
	for k, runs := range groups {
		if len(runs) < 2 {
			continue
		}
		slices.SortFunc(runs, func(a, b execution) int { return a.start.Compare(b.start) })
		d := duplicate{name: k.name, generation: k.gen, runs: runs}
		for _, r := range runs[:len(runs)-1] {
			var excuse *faultRecord
			for i := range faults {
				f := &faults[i]
				if !r.start.After(f.end.Add(lease)) && !r.end.Before(f.start.Add(-lease)) {
					excuse = f
					break
				}
			}
			d.excuses = append(d.excuses, excuse)
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b duplicate) int {
		return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.generation, b.generation))
	})
	return out
}

// rateIn returns completions per second in [from, to).
func rateIn(completions []time.Time, from, to time.Time) float64 {
	if !to.After(from) {
		return 0
	}
	return float64(countIn(completions, from, to)) / to.Sub(from).Seconds()
}

// countIn counts the sorted times in [from, to).
func countIn(sorted []time.Time, from, to time.Time) int {
	lo, _ := slices.BinarySearchFunc(sorted, from, func(a, b time.Time) int { return a.Compare(b) })
	hi, _ := slices.BinarySearchFunc(sorted, to, func(a, b time.Time) int { return a.Compare(b) })
	return hi - lo
}

// Recovery is measured over windows of recoveryWindow, slid by
// recoveryStep, that start at or after the fault: a window holds only
// completions after the fault, so the measured recovery is at least one
// window long.
const (
	recoveryWindow = time.Second
	recoveryStep   = 100 * time.Millisecond
	recoveryShare  = 0.95
	// resumeShare is the looser bound asserted unless the run is strict:
	// on a shared two-core machine the other processes' load moves the
	// rate by more than 5% on its own.
	resumeShare = 0.5
)

// recoveryTime returns how long after from the completion rate first ran
// at share of baseline or more over a whole window ending by until; -1
// if it never did.
func recoveryTime(completions []time.Time, from, until time.Time, baseline, share float64) time.Duration {
	want := share * baseline * recoveryWindow.Seconds()
	for s := from; !s.Add(recoveryWindow).After(until); s = s.Add(recoveryStep) {
		if float64(countIn(completions, s, s.Add(recoveryWindow))) >= want {
			return s.Add(recoveryWindow).Sub(from)
		}
	}
	return -1
}

// lowestRate returns the lowest completion rate over the windows that
// recoveryTime looks at, or 0 if there is none.
func lowestRate(completions []time.Time, from, until time.Time) float64 {
	lowest := -1.0
	for s := from; !s.Add(recoveryWindow).After(until); s = s.Add(recoveryStep) {
		r := rateIn(completions, s, s.Add(recoveryWindow))
		if lowest < 0 || r < lowest {
			lowest = r
		}
	}
	return max(lowest, 0)
}

// timeline renders, per whole second from from to to, the completions and the
// acknowledged writes: "-2s:31/40 -1s:30/39 +0s:12/40 …". A dip in both
// is the load's (or the machine's); a dip in completions alone is the
// work's.
func timeline(completions, acks []time.Time, from, at, to time.Time) string {
	var b strings.Builder
	for s := from; !s.Add(time.Second).After(to); s = s.Add(time.Second) {
		fmt.Fprintf(&b, "%+ds:%d/%d ", int(s.Sub(at).Round(time.Second).Seconds()),
			countIn(completions, s, s.Add(time.Second)), countIn(acks, s, s.Add(time.Second)))
	}
	return strings.TrimSpace(b.String())
}

// serverResource is a chaos resource as the database holds it.
type serverResource struct {
	name               string
	generation, synced int64
	phase              string
	reconciles         int64
	greeting           string
	appliedGenerations int64 // distinct synced generations in the change feed
}

// readChaosResources reads every resource of the chaos kind, with the
// number of distinct generations the change feed saw applied.
func readChaosResources(ctx context.Context, pool *pgxpool.Pool) (map[string]serverResource, error) {
	rows, err := pool.Query(ctx, `SELECT r.name, r.generation, r.synced_generation, converge_phase(r), r.reconciles,
		coalesce(r.spec->>'greeting', ''),
		(SELECT count(DISTINCT c.synced_generation) FROM changes c
		 WHERE c.resource_id = r.id AND c.synced_generation > 0)
		FROM resources r WHERE r.kind = $1`, chaosKind)
	if err != nil {
		return nil, fmt.Errorf("reading the chaos resources: %w", err)
	}
	defer rows.Close()
	out := map[string]serverResource{}
	for rows.Next() {
		var r serverResource
		if err := rows.Scan(&r.name, &r.generation, &r.synced, &r.phase, &r.reconciles, &r.greeting, &r.appliedGenerations); err != nil {
			return nil, fmt.Errorf("reading the chaos resources: %w", err)
		}
		out[r.name] = r
	}
	return out, rows.Err()
}

// readCompletions returns when each applied result moved a resource's
// synced generation forward, in database time, sorted.
func readCompletions(ctx context.Context, pool *pgxpool.Pool) ([]time.Time, error) {
	rows, err := pool.Query(ctx, `SELECT at FROM (
		    SELECT at, synced_generation,
		           lag(synced_generation, 1, 0::bigint) OVER (PARTITION BY resource_id ORDER BY seq) AS prev
		    FROM changes WHERE kind = $1) c
		WHERE synced_generation > prev ORDER BY at`, chaosKind)
	if err != nil {
		return nil, fmt.Errorf("reading completions from the change feed: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var at time.Time
		if err := rows.Scan(&at); err != nil {
			return nil, fmt.Errorf("reading completions from the change feed: %w", err)
		}
		out = append(out, at)
	}
	return out, rows.Err()
}

// lostWrites checks invariant 1: every acknowledged write is on the
// server, at its generation or a later one, and with its spec when the
// generation is the same.
func lostWrites(acked map[string]ackedWrite, server map[string]serverResource) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(acked)) {
		a := acked[name]
		r, ok := server[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s/%s: acknowledged at generation %d, but the server has no such resource", chaosKind, name, a.generation))
		case r.generation < a.generation:
			out = append(out, fmt.Sprintf("%s/%s: acknowledged at generation %d, but the server holds generation %d", chaosKind, name, a.generation, r.generation))
		case r.generation == a.generation && r.greeting != a.greeting:
			out = append(out, fmt.Sprintf("%s/%s: generation %d was acknowledged with greeting %q, but the server holds %q at that generation",
				chaosKind, name, a.generation, a.greeting, r.greeting))
		}
	}
	return out
}

// appliedTwice checks the server's side of invariant 2: each applied
// result counts one reconcile and moves the synced generation, which the
// change feed records; more reconciles than generations seen applied
// means a generation was applied twice.
func appliedTwice(server map[string]serverResource) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(server)) {
		r := server[name]
		if r.reconciles != r.appliedGenerations {
			out = append(out, fmt.Sprintf("%s/%s: %d reconciles applied but the change feed saw %d distinct generations synced (generation %d, synced %d)",
				chaosKind, name, r.reconciles, r.appliedGenerations, r.generation, r.synced))
		}
	}
	return out
}
