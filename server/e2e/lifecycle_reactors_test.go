//go:build unix

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// dbKind is a leaf with an operation verb, resize, whose input must name
// a size of at least 1.
const dbKind = `type: manifest
kind: db
kind_version: 1
owner: e2e
spec_schema:
  type: object
  additionalProperties: false
  properties:
    size: {type: integer, minimum: 1}
    engine: {type: string}
    fail: {type: string}
    report: {type: object}
operations:
  - verb: resize
    input_schema:
      type: object
      additionalProperties: false
      required: [size]
      properties:
        size: {type: integer, minimum: 1}
        fail: {type: string}
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
  - {name: resize, trigger: operation, verb: resize, emits: [operationOutput]}
`

// pagerKind is a reactor kind.
const pagerKind = `type: manifest
kind: pager
kind_version: 1
owner: e2e
reactions:
  - {name: page, trigger: reactor, emits: [sideEffect]}
`

// pagerBinding is a reactorbinding document watching db for failed and
// synced; selector and disabled are added as given.
func pagerBinding(name, selector string, disabled bool) string {
	doc := "type: reactorbinding\nname: " + name + "\nwatch_kind: db\ntransitions: [failed, synced]\nreactor_kind: pager\nreactor_kind_version: 1\n"
	if selector != "" {
		doc += "label_selector: " + selector + "\n"
	}
	if disabled {
		doc += "disabled: true\n"
	}
	return doc
}

// dbDoc is a db resource document with one label, env.
func dbDoc(name, env, spec string) string {
	return "type: resource\nkind: db\nkind_version: 1\nname: " + name + "\nlabels: {env: " + env + "}\nspec: " + spec + "\n"
}

// TestReactors binds a reactor kind to db transitions with a label
// selector: a matching db that fails terminally is delivered with its
// dedup token, one the selector excludes is not; a binding disabled live
// delivers nothing more while another binding still does; and a binding
// to a reactor kind that does not exist is refused.
func TestReactors(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(dbKind+"---\n"+pagerKind, "kind db/v1 created", "kind pager/v1 created")
	// audit sees every db; it tells the test when a transition has been
	// delivered, so page-prod's silence can be judged.
	l.mustApply(pagerBinding("page-prod", "env=prod", false)+"---\n"+pagerBinding("audit", "", false),
		"reactorbinding page-prod created", "reactorbinding audit created")

	l.mustApply(dbDoc("orders", "prod", "{size: 1}") + "---\n" + dbDoc("scratch", "dev", "{size: 1}"))
	orders := l.waitSynced("db", "orders", 1)
	l.waitSynced("db", "scratch", 1)
	l.waitDelivery("audit", "scratch", "synced", 1)
	synced := l.waitDelivery("page-prod", "orders", "synced", 1)
	l.waitReactorDrained()
	if got := l.deliveries("page-prod", "scratch"); len(got) != 0 {
		t.Errorf("page-prod (env=prod) delivered transitions of db/scratch (env=dev):\n%s", renderLC(got))
	}

	// A terminal failure is delivered with its dedup token.
	l.mustApply(dbDoc("orders", "prod", `{size: 1, fail: "disk full"}`))
	failed := l.waitDelivery("page-prod", "orders", "failed", 2)
	token := regexp.MustCompile(`^page-prod/` + regexp.QuoteMeta(orders.GetUid()) + `/failed/[0-9]+$`)
	if !token.MatchString(failed.DedupToken) || failed.Reactor.WatchedPhase != "Failed" {
		t.Errorf("the failed delivery: %s; want phase Failed and a dedup token matching %s", failed, token)
	}
	if failed.DedupToken == synced.DedupToken {
		t.Errorf("two transitions share the dedup token %q", failed.DedupToken)
	}
	if audit := l.waitDelivery("audit", "orders", "failed", 2); audit.DedupToken == failed.DedupToken {
		t.Errorf("two bindings share the dedup token %q", failed.DedupToken)
	}

	// Disabled live: no more deliveries, while audit keeps delivering.
	l.mustApply(pagerBinding("page-prod", "env=prod", true), "reactorbinding page-prod configured")
	l.mustApply(dbDoc("orders", "prod", "{size: 2}"))
	l.waitSynced("db", "orders", 3)
	l.waitDelivery("audit", "orders", "synced", 3)
	l.waitReactorDrained()
	for _, r := range l.deliveries("page-prod", "orders") {
		if r.Reactor.WatchedGeneration >= 3 {
			t.Errorf("page-prod delivered after it was disabled: %s", r)
		}
	}

	// A binding to a reactor kind that is not registered.
	ghost := strings.Replace(pagerBinding("page-ghost", "", false), "reactor_kind: pager", "reactor_kind: ghost", 1)
	res := l.apply(ghost)
	if res.code == 0 || !strings.Contains(res.stderr, "binding.reactor_kind") || !strings.Contains(res.stderr, "not registered") {
		t.Errorf("a binding to the unregistered reactor kind ghost: want a non-zero exit naming binding.reactor_kind as not registered:\n%s", res)
	}
	if res := l.ctl("get", "reactorbinding", "page-ghost"); res.code == 0 {
		t.Errorf("a refused binding exists:\n%s", res)
	}
}

// deliveries are the reactor deliveries the worker ran for binding about
// db/watched.
func (l *lifecycle) deliveries(binding, watched string) []lcRecord {
	l.t.Helper()
	var out []lcRecord
	for _, r := range l.records() {
		if e := r.Reactor; e != nil && e.Binding == binding && e.WatchedKind == "db" && e.WatchedName == watched {
			out = append(out, r)
		}
	}
	return out
}

// waitDelivery waits until binding has delivered transition of db/watched
// at generation gen.
func (l *lifecycle) waitDelivery(binding, watched, transition string, gen int64) lcRecord {
	l.t.Helper()
	return l.waitRecord("binding "+binding+" delivering db/"+watched+" "+transition, func(r lcRecord) bool {
		e := r.Reactor
		return e != nil && e.Binding == binding && e.WatchedName == watched && e.Transition == transition && e.WatchedGeneration == gen
	})
}

// waitReactorDrained waits until no reactor delivery is queued or running:
// what was queued with a delivery already seen has then run too.
func (l *lifecycle) waitReactorDrained() {
	l.t.Helper()
	deadline := time.Now().Add(lifecycleTimeout)
	for countRows(l.t, l.db.Pool, `SELECT count(*) FROM tasks WHERE trigger = 'reactor'`) > 0 {
		if time.Now().After(deadline) {
			l.t.Fatalf("reactor deliveries are still queued after %s; the worker recorded:\n%s", lifecycleTimeout, renderLC(l.records()))
		}
		time.Sleep(pollInterval)
	}
}
