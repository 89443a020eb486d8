//go:build unix

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"pgregory.net/rapid"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/trigger"
)

// Management policy in the model: the manage action moves a leaf root
// between full management and observation, and the recorder checks that
// no create, update or delete reaction (specChange, resync,
// deleteRequested) is ever started for a resource while it is observed.
// The model's leaf kinds have an observe reaction run by the same handler
// as their reconcile, so every other prediction holds either way.

// observeWindow is a time a resource was observed: from when the change
// to observe committed, until the change back was asked for. afterTask is
// the highest task id there was when it began: tasks queued before (and
// dropped by the change) may still reach a worker that had them claimed;
// any mutating task queued since is the engine's mistake.
type observeWindow struct {
	from, to  time.Time
	afterTask int64
}

// observing records that key (kind/name) is observed from now, past every
// task id up to afterTask.
func (r *recorder) observing(key string, afterTask int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.observed == nil {
		r.observed = map[string][]*observeWindow{}
	}
	r.observed[key] = append(r.observed[key], &observeWindow{from: time.Now(), afterTask: afterTask})
}

// managing closes key's observe window, before the change back is asked for.
func (r *recorder) managing(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ws := r.observed[key]; len(ws) > 0 && ws[len(ws)-1].to.IsZero() {
		ws[len(ws)-1].to = time.Now()
	}
}

// checkObserved flags a mutating reaction started for an observed
// resource from a task queued while it was; r.mu is held.
func (r *recorder) checkObserved(inv *invocation) {
	if !slices.Contains(trigger.Mutating, inv.trigger) {
		return
	}
	id := taskIDOf(inv.token)
	for _, w := range r.observed[inv.kv.kind+"/"+inv.name] {
		if inv.start.Before(w.from) || (!w.to.IsZero() && !inv.start.Before(w.to)) || id <= w.afterTask {
			continue
		}
		r.problems = append(r.problems, problem{"mutating reaction while observed",
			fmt.Sprintf("%s ran for %s/%s, observed since %s (tasks after %d): %s", inv.trigger, inv.kv.kind, inv.name,
				w.from.Format("15:04:05.000"), w.afterTask, inv)})
	}
}

// taskIDOf is the task id a reconcile or teardown's dedup token ends with
// (resource/trigger/generation/task); 0 when it has none.
func taskIDOf(token string) int64 {
	i := strings.LastIndexByte(token, '/')
	id, err := strconv.ParseInt(token[i+1:], 10, 64)
	if err != nil {
		return 0
	}
	return id
}

// maxTaskID is the highest task id queued so far.
func maxTaskID(t tb, db *pgxpool.Pool) int64 {
	t.Helper()
	var id int64
	if err := db.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM tasks`).Scan(&id); err != nil {
		t.Fatalf("reading the task ids: %v", err)
	}
	return id
}

// manage moves a leaf root to observe, or back to full.
func (w *world) manage(t *rapid.T) {
	w.rec.nudge() // its reconcile runs again under the new policy
	m := w.res[pick(t, w.resWhere(func(m *mres) bool { return m.owner == "" && m.comp == nil && !m.deleted }), "leaf root")]
	policy := trigger.PolicyObserve
	if m.observed {
		policy = trigger.PolicyFull
		w.rec.managing(m.key())
	}
	w.note(t, "manage %s %s", m.key(), policy)
	mustCall(t, "manage "+m.key(), w.api.SetManagementPolicy, &convergev1.SetManagementPolicyRequest{
		Kind: m.kind, Name: m.name, ManagementPolicy: policy, Reason: "model"})
	if policy == trigger.PolicyObserve {
		w.rec.observing(m.key(), maxTaskID(t, w.db))
	}
	m.observed = !m.observed
}
