//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// teardownLine is one step of the teardown conctl delete --dry-run prints.
var teardownLine = regexp.MustCompile(`(?m)^\s+wave (\d+)\s+default/(\w+)/([\w-]+)\s`)

// TestDryRunPredictsApplyAndDelete previews a spec change and the
// deletion of a composite with conctl --dry-run: nothing changes (no new
// generation, no Deleting, no event), the apply's preview names the
// generation the real apply then makes, and the delete's teardown waves
// are the order in which the real delete removes the resources.
func TestDryRunPredictsApplyAndDelete(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	startSpecWorker(t, srv, "specworker")
	const root, a, b, c = "dr", "dr-a", "dr-b", "dr-c"
	applyComposite(t, srv.api, kindStack, root, chainDoc(a, b, c))
	waitPhase(t, srv.api, kindStack, root, client.PhaseReady)

	// A spec change, previewed and then applied.
	doc := func(id string) string {
		return "type: resource\nkind: " + kindFin + "\nkind_version: 1\nname: solo\nspec: {id: " + id + "}\n"
	}
	if r := conctl(t, srv, doc("one"), "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r)
	}
	solo := waitPhase(t, srv.api, kindFin, "solo", client.PhaseReady)
	events := len(eventsOf(t, srv.api, kindFin, "solo"))
	dry := conctl(t, srv, doc("two"), "apply", "-f", "-", "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "resource default/fin/solo configured (dry run)") ||
		!strings.Contains(dry.stdout, "generation 1 -> 2") || !strings.Contains(dry.stdout, `-  "id": "one"`) ||
		!strings.Contains(dry.stdout, `+  "id": "two"`) {
		t.Fatalf("the preview of a spec change:\n%s", dry)
	}
	if now := getResource(t, srv.api, kindFin, "solo"); now.GetGeneration() != solo.GetGeneration() ||
		now.GetSpec().GetFields()["id"].GetStringValue() != "one" || len(eventsOf(t, srv.api, kindFin, "solo")) != events {
		t.Fatalf("after the dry run: generation %d, spec %v, %d events; want it untouched", now.GetGeneration(), now.GetSpec(), events)
	}
	if r := conctl(t, srv, doc("two"), "apply", "-f", "-"); r.code != 0 || !strings.Contains(r.stdout, "configured") {
		t.Fatal(r)
	}
	if now := getResource(t, srv.api, kindFin, "solo"); now.GetGeneration() != 2 {
		t.Fatalf("the real apply made generation %d; the preview said 2", now.GetGeneration())
	}
	if r := conctl(t, srv, doc("three"), "apply", "-f", "-", "--dry-run", "--wait"); r.code != 1 || !strings.Contains(r.stderr, "nothing to wait for") {
		t.Fatalf("--dry-run with --wait: %s", r)
	}

	// A plan of a composite whose composer is a worker program is composed
	// by that worker as a preview: the same children, nothing to change.
	spec, err := json.Marshal(chainDoc(a, b, c))
	if err != nil {
		t.Fatal(err)
	}
	stackDoc := fmt.Sprintf(`{"type": "resource", "kind": %q, "kind_version": 1, "name": %q, "spec": %s}`, kindStack, root, spec)
	plan := conctl(t, srv, stackDoc, "plan", "-f", "-")
	if plan.code != 0 || !strings.Contains(plan.stdout, "resource default/stack/dr unchanged (dry run)") ||
		!strings.Contains(plan.stdout, "composite default/stack/dr (worker ") ||
		!strings.Contains(plan.stdout, "Plan: 0 child(ren) to create, 0 to update, 0 to prune, 0 to orphan, 3 unchanged, across 1 composite(s); nothing was changed.") {
		t.Fatalf("plan of a worker-composed composite, previewed by its worker:\n%s", plan)
	}

	// A delete, previewed and then made.
	dry = conctl(t, srv, "", "delete", "resource", kindStack+"/"+root, "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "deleting (dry run)") || !strings.Contains(dry.stdout, "teardown, 4 resource(s), in order:") {
		t.Fatalf("the preview of a delete:\n%s", dry)
	}
	wave := map[string]int{}
	for _, m := range teardownLine.FindAllStringSubmatch(dry.stdout, -1) {
		wave[m[3]], _ = strconv.Atoi(m[1])
	}
	if want := map[string]int{c: 1, b: 2, a: 3, root: 4}; !maps.Equal(wave, want) {
		t.Fatalf("predicted teardown waves %v, want %v:\n%s", wave, want, dry.stdout)
	}
	top := getResource(t, srv.api, kindStack, root)
	if top.GetPhase() != client.PhaseReady || top.GetDeletionRequestedAt() != nil || lastEventOrNil(t, srv.api, kindStack, root, "DeletionRequested") != nil {
		t.Fatalf("after the dry run of its delete the composite is %s", explain(top))
	}
	deleteResource(t, srv.api, kindStack, root)
	waitGone(t, srv.api, kindStack, root, composeTimeout)
	type gone struct {
		name string
		at   int64
	}
	var order []gone
	for name := range wave {
		kind := kindFin
		if name == root {
			kind = kindStack
		}
		order = append(order, gone{name, lastEvent(t, srv.api, kind, name, "Deleted").GetTime().AsTime().UnixNano()})
	}
	sort.Slice(order, func(i, j int) bool { return order[i].at < order[j].at })
	for i := 1; i < len(order); i++ {
		if wave[order[i].name] < wave[order[i-1].name] {
			t.Errorf("%s (predicted wave %d) was removed after %s (wave %d)", order[i-1].name, wave[order[i-1].name],
				order[i].name, wave[order[i].name])
		}
	}
}

func lastEventOrNil(t *testing.T, c *client.Client, kind, name, reason string) *convergev1.Event {
	t.Helper()
	var last *convergev1.Event
	for _, e := range eventsOf(t, c, kind, name) {
		if e.GetReason() == reason {
			last = e
		}
	}
	return last
}

// TestAbandonStuckTeardown deletes a top-level resource whose teardown
// always fails: it stays Deleting, its condition names --abandon, and
// conctl delete --abandon removes it, saying what it left behind and
// recording why.
func TestAbandonStuckTeardown(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applySpecKinds(t, srv.api)
	const name, msg = "stuck-forever", "the bucket is not empty"
	startSpecWorker(t, srv, "specworker -fail-teardown", "-fail-teardown", name+":"+msg)
	if r := conctl(t, srv, "type: resource\nkind: "+kindFin+"\nkind_version: 1\nname: "+name+"\nspec: {}\n", "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r)
	}
	waitPhase(t, srv.api, kindFin, name, client.PhaseReady)
	deleteResource(t, srv.api, kindFin, name)
	stuck := waitResource(t, srv.api, kindFin, name, "Deleting with its teardown failed 3 times", composeTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == client.PhaseDeleting && r.GetFailure().GetAttempts() >= 3
	})
	hinted := false
	for _, c := range stuck.GetConditions() {
		hinted = hinted || strings.Contains(c.GetMessage(), "--abandon")
	}
	if !hinted {
		t.Errorf("a resource whose teardown keeps failing does not name --abandon: %s", explain(stuck))
	}

	ref := kindFin + "/" + name
	if r := conctl(t, srv, "", "delete", "resource", ref, "--abandon"); r.code != 1 || !strings.Contains(r.stderr, "--reason") {
		t.Fatalf("abandon without a reason: %s", r)
	}
	dry := conctl(t, srv, "", "delete", "resource", ref, "--abandon", "--reason", "emptied by hand", "--dry-run")
	if dry.code != 0 || !strings.Contains(dry.stdout, "abandoned (dry run)") {
		t.Fatalf("dry run of abandon: %s", dry)
	}
	if r := getResource(t, srv.api, kindFin, name); r == nil || r.GetPhase() != client.PhaseDeleting {
		t.Fatalf("after the dry run of abandon: %s", explain(r))
	}
	r := conctl(t, srv, "", "delete", "resource", ref, "--abandon", "--reason", "emptied by hand")
	if r.code != 0 || !strings.Contains(r.stdout, "1 resource(s) removed without teardown") || !strings.Contains(r.stdout, "default/"+ref) {
		t.Fatalf("abandon: %s", r)
	}
	waitGone(t, srv.api, kindFin, name, callTimeout)
	ev := lastEventOrNil(t, srv.api, kindFin, name, "Abandoned")
	if ev == nil || ev.GetType() != "Warning" || !strings.Contains(ev.GetMessage(), "emptied by hand") {
		t.Fatalf("the Abandoned event: %v", ev)
	}
}
