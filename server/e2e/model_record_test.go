//go:build unix

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// kindVer names one kind version: the unit max_inflight caps.
type kindVer struct {
	kind string
	v    int
}

func (k kindVer) String() string { return fmt.Sprintf("%s/v%d", k.kind, k.v) }

// invocation is one handler run, as the model's workers saw it.
type invocation struct {
	kv               kindVer
	reaction         string
	trigger          string
	name, uid, token string
	gen              int64
	attempt          int
	start, end       time.Time
	outcome          string        // "ok", "transient", "terminal", "cancelled"; "" while running
	retryAfter       time.Duration // the retry-after a transient failure asked for
	reason           string        // the reason code a failure gave
}

func (i *invocation) String() string {
	return fmt.Sprintf("%s %s %s(%s) %s gen %d attempt %d token %s [%s .. %s] %s", i.start.Format("15:04:05.000"),
		i.kv, i.reaction, i.trigger, i.name, i.gen, i.attempt, i.token, i.start.Format("05.000"), i.end.Format("05.000"), i.outcome)
}

// problem is an invariant broken while handlers ran. class is stable across
// runs of one case (rapid compares failure messages when it shrinks);
// detail says what happened.
type problem struct {
	class, detail string
}

// capState is what the model believes a kind version's max_inflight is,
// and since when.
type capState struct {
	limit   int
	changed time.Time
}

// recorder instruments every handler of one case: the invocation log, the
// in-flight count per kind version with its observed maximum, and the
// invariants that can only be seen from inside the handlers (max_inflight,
// no duplicate execution), excused inside fault windows.
type recorder struct {
	faultFor time.Duration // how long a fault excuses duplicates

	mu      sync.Mutex
	log     []*invocation
	running map[kindVer]map[*invocation]bool
	maxSeen map[kindVer]int
	caps    map[kindVer]capState
	seen    map[string]*invocation // token#attempt
	faults  []time.Time
	// nudges are when the model did what may run a resource before its
	// retry time: a forced reconcile, a config or policy edit.
	nudges   []time.Time
	problems []problem
	// observed holds each resource's observe windows (model_observe_test.go).
	observed map[string][]*observeWindow
}

func newRecorder(faultFor time.Duration) *recorder {
	return &recorder{faultFor: faultFor, running: map[kindVer]map[*invocation]bool{}, maxSeen: map[kindVer]int{},
		caps: map[kindVer]capState{}, seen: map[string]*invocation{}}
}

// fault opens a fault window now: a server crash or a worker stopped
// without a drain. Until it closes, work may run twice (at-least-once) and
// a dead member's claims may still count against a cap.
func (r *recorder) fault() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, time.Now())
}

// nudge notes an action that may run a waiting resource early.
func (r *recorder) nudge() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nudges = append(r.nudges, time.Now())
}

// nudgedBetween reports whether a nudge fell in [from, to]; r.mu is held.
func (r *recorder) nudgedBetween(from, to time.Time) bool {
	for _, n := range r.nudges {
		if !n.Before(from) && !n.After(to) {
			return true
		}
	}
	return false
}

// inFault reports whether at lies in a fault window; r.mu is held.
func (r *recorder) inFault(at time.Time) bool {
	for _, f := range r.faults {
		if !at.Before(f) && at.Before(f.Add(r.faultFor)) {
			return true
		}
	}
	return false
}

// setCap records a max_inflight change. It is called before the change
// with the larger of the two caps and after it with the new one, so the
// recorder is never stricter than the server while the change is in flight.
func (r *recorder) setCap(kv kindVer, limit int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.caps[kv] = capState{limit: limit, changed: time.Now()}
}

func (r *recorder) capOf(kv kindVer) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.caps[kv].limit
}

// begin records the start of a handler run and checks the invariants a
// start can break.
func (r *recorder) begin(t *converge.Task) *invocation {
	inv := &invocation{kv: kindVer{t.Kind, t.KindVersion}, reaction: t.Reaction, trigger: t.Trigger, name: t.Name,
		uid: t.UID, token: t.DedupToken, gen: t.Generation, attempt: t.Attempt, start: time.Now()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, inv)
	run := r.running[inv.kv]
	if run == nil {
		run = map[*invocation]bool{}
		r.running[inv.kv] = run
	}
	run[inv] = true
	n := len(run)
	r.maxSeen[inv.kv] = max(r.maxSeen[inv.kv], n)
	if c := r.caps[inv.kv]; c.limit > 0 && n > c.limit && !r.inFault(inv.start) && !r.startedBefore(run, c.changed) {
		r.problems = append(r.problems, problem{"max_inflight exceeded",
			fmt.Sprintf("%s: %d handlers running at once, max_inflight %d; running: %s", inv.kv, n, c.limit, renderRunning(run))})
	}
	r.checkOverlap(inv)
	if inv.token != "" {
		key := fmt.Sprintf("%s#%d", inv.token, inv.attempt)
		if prev := r.seen[key]; prev != nil && !r.inFault(inv.start) {
			r.problems = append(r.problems, problem{"duplicate execution",
				fmt.Sprintf("(dedup token, attempt) (%s, %d) ran twice outside a fault window:\n  first:  %s\n  second: %s", inv.token, inv.attempt, prev, inv)})
		}
		r.seen[key] = inv
		r.checkRetryAfter(inv)
	}
	r.checkObserved(inv)
	return inv
}

// reconcileTriggers are the triggers of a resource's own reconcile, of
// which one at a time may run.
var reconcileTriggers = map[string]bool{"specChange": true, "resync": true, "observe": true}

// checkOverlap: a resource's reconciles never run side by side, unless a
// fault since the earlier one started may have cost its lease; r.mu is
// held.
func (r *recorder) checkOverlap(inv *invocation) {
	if !reconcileTriggers[inv.trigger] {
		return
	}
	for _, run := range r.running {
		for o := range run {
			if o == inv || o.uid != inv.uid || !reconcileTriggers[o.trigger] || r.faultSince(o.start) {
				continue
			}
			r.problems = append(r.problems, problem{"overlapping reconciles",
				fmt.Sprintf("%s: %s started while %s still ran:\n  running: %s\n  started: %s", inv.name, inv.trigger, o.trigger, o, inv)})
		}
	}
}

// faultSince reports whether a fault, or its window, reaches past at;
// r.mu is held.
func (r *recorder) faultSince(at time.Time) bool {
	for _, f := range r.faults {
		if f.Add(r.faultFor).After(at) {
			return true
		}
	}
	return false
}

// retrySlack allows for the clock reads of the handler and the server.
const retrySlack = 20 * time.Millisecond

// checkRetryAfter: a retry of a transient failure that asked for a
// retry-after starts no sooner, unless a fault or a nudge came between;
// r.mu is held.
func (r *recorder) checkRetryAfter(inv *invocation) {
	prev := r.seen[fmt.Sprintf("%s#%d", inv.token, inv.attempt-1)]
	if prev == nil || prev.outcome != "transient" || prev.retryAfter == 0 || prev.end.IsZero() {
		return
	}
	if early := prev.end.Add(prev.retryAfter - retrySlack); inv.start.Before(early) &&
		!r.inFault(prev.end) && !r.inFault(inv.start) && !r.nudgedBetween(prev.start, inv.start) {
		r.problems = append(r.problems, problem{"retry-after not honoured",
			fmt.Sprintf("attempt %d started %s after attempt %d failed asking to be retried after %s:\n  failed: %s\n  retry:  %s",
				inv.attempt, inv.start.Sub(prev.end).Round(time.Millisecond), prev.attempt, prev.retryAfter, prev, inv)})
	}
}

// startedBefore reports whether a running handler started before at: it
// was claimed under the cap in force before a live change, and may finish.
func (r *recorder) startedBefore(run map[*invocation]bool, at time.Time) bool {
	for i := range run {
		if i.start.Before(at) {
			return true
		}
	}
	return false
}

func renderRunning(run map[*invocation]bool) string {
	var parts []string
	for i := range run {
		parts = append(parts, fmt.Sprintf("%s(%s)@%s", i.name, i.trigger, i.start.Format("05.000")))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// finish records how a handler run ended.
func (r *recorder) finish(inv *invocation, outcome string, err error) {
	retryAfter, _ := converge.RetryAfterOf(err)
	r.mu.Lock()
	defer r.mu.Unlock()
	inv.end, inv.outcome, inv.retryAfter, inv.reason = time.Now(), outcome, retryAfter, converge.ReasonOf(err)
	delete(r.running[inv.kv], inv)
}

// takeProblems returns the problems seen so far, first class first.
func (r *recorder) takeProblems() []problem {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]problem(nil), r.problems...)
}

// recordable returns, by resource uid, up to n of its last handler runs
// that ended (not cancelled) away from any fault: no fault window open at
// their start or end, nor one opened within margin after they ended.
func (r *recorder) recordable(n int, margin time.Duration) map[string][]invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]invocation{}
	for i := len(r.log) - 1; i >= 0; i-- {
		inv := r.log[i]
		if len(out[inv.uid]) >= n || inv.outcome == "" || inv.outcome == "cancelled" ||
			r.inFault(inv.start) || r.inFault(inv.end) || r.faultWithin(inv.end, margin) {
			continue
		}
		out[inv.uid] = append(out[inv.uid], *inv)
	}
	return out
}

// faultWithin reports whether a fault began within d after at; r.mu is
// held.
func (r *recorder) faultWithin(at time.Time, d time.Duration) bool {
	for _, f := range r.faults {
		if !f.Before(at) && f.Before(at.Add(d)) {
			return true
		}
	}
	return false
}

// invocations returns a copy of the log, in start order.
func (r *recorder) invocations() []invocation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]invocation, len(r.log))
	for i, inv := range r.log {
		out[i] = *inv
	}
	return out
}

// summary is the log's tail and the in-flight maxima, for failure reports.
func (r *recorder) summary(n int) string {
	all := r.invocations()
	var b strings.Builder
	r.mu.Lock()
	for kv, m := range r.maxSeen {
		fmt.Fprintf(&b, "  max in flight %s: %d (cap now %d)\n", kv, m, r.caps[kv].limit)
	}
	r.mu.Unlock()
	if len(all) > n {
		fmt.Fprintf(&b, "  ... %d earlier handler runs\n", len(all)-n)
		all = all[len(all)-n:]
	}
	for i := range all {
		fmt.Fprintf(&b, "  %s\n", &all[i])
	}
	return b.String()
}
