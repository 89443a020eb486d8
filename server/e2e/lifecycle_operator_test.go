//go:build unix

package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestOperatorActions quarantines a resource (its spec change does not
// run), unquarantines it (the change runs), forces a reconcile of it while
// Ready (the worker sees the same generation again), reads the actions
// back as events with actor and reason in conctl describe, and invokes
// its kind's operation verb: with valid input, with input its schema
// refuses, and with input that makes the worker fail it.
func TestOperatorActions(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(dbKind, "kind db/v1 created")
	l.mustApply(dbDoc("q", "prod", "{size: 1}") + "---\n" + dbDoc("other", "prod", "{size: 1}"))
	l.waitSynced("db", "q", 1)
	l.waitSynced("db", "other", 1)

	// Quarantined: a new spec is stored but does not run.
	l.mustCtl("quarantine", "db/q", "--reason", "its handler crashes the worker")
	if q := l.get("db/q"); q.GetPhase() != client.PhaseQuarantined {
		t.Fatalf("db/q after quarantine: %s; want Quarantined", explain(q))
	}
	l.mustApply(dbDoc("q", "prod", "{size: 2}"), "resource default/db/q configured")
	// db/other's change is queued after db/q's would have been, for the
	// same idle worker: once it has run, a task of db/q would have run
	// too, short of a sleep that could never prove more.
	l.mustApply(dbDoc("other", "prod", "{size: 2}"))
	l.waitSynced("db", "other", 2)
	if q := l.get("db/q"); q.GetPhase() != client.PhaseQuarantined || q.GetGeneration() != 2 || q.GetSyncedGeneration() != 1 {
		t.Errorf("db/q after a spec change while quarantined: %s; want Quarantined at generation 2, synced 1", explain(q))
	}
	if ran := l.tasks("db", "q", ""); len(ran) != 1 {
		t.Errorf("the worker ran tasks of db/q while it was quarantined:\n%s", renderLC(ran))
	}
	if res := l.ctl("reconcile", "db/q"); res.code == 0 || !strings.Contains(res.stderr, "quarantined") {
		t.Errorf("a forced reconcile of a quarantined resource: want a non-zero exit saying it is quarantined:\n%s", res)
	}

	// Unquarantined: the pending generation runs.
	l.mustCtl("unquarantine", "db/q", "--reason", "worker fixed in v1.4.2")
	l.waitSynced("db", "q", 2)
	if ev := lastEvent(t, l.srv.api, "db", "q", "Unquarantined"); !strings.Contains(ev.GetMessage(), "generation 2 queued for reconcile") {
		t.Errorf("the Unquarantined event says %q; want it to say generation 2 was queued", ev.GetMessage())
	}

	// Forced reconcile of a Ready resource: another specChange at the same
	// generation.
	l.mustCtl("reconcile", "db/q", "--reason", "credentials rotated", "--wait")
	if ran := l.tasks("db", "q", "specChange"); len(ran) != 3 || ran[1].Generation != 2 || ran[2].Generation != 2 {
		t.Errorf("after a forced reconcile of db/q at generation 2, the worker ran:\n%s\nwant specChange at generations 1, 2, 2", renderLC(ran))
	}
	if q := l.get("db/q"); q.GetGeneration() != 2 || q.GetPhase() != client.PhaseReady {
		t.Errorf("db/q after a forced reconcile: %s; want Ready at generation 2", explain(q))
	}

	// The actions, as describe shows them.
	report := l.mustCtl("describe", "resource", "db/q").stdout
	for _, want := range []struct{ reason, message string }{
		{"Quarantined", "quarantined: its handler crashes the worker"},
		{"Unquarantined", "unquarantined: worker fixed in v1.4.2"},
		{"ReconcileRequested", "reconcile forced at generation 2: credentials rotated"},
	} {
		line := eventLine(report, want.reason)
		if !strings.Contains(line, want.message) || !regexp.MustCompile(`\bapi:\S+`).MatchString(line) {
			t.Errorf("describe db/q: want a %s event by api:… saying %q; got line %q in:\n%s", want.reason, want.message, line, report)
		}
	}

	l.checkOperations()
}

// checkOperations invokes db/q's resize verb: with valid input, with
// input its schema refuses, with an unknown verb and with input the
// worker fails.
func (l *lifecycle) checkOperations() {
	t := l.t
	t.Helper()
	res := l.mustCtl("op", "db/q", "resize", "--input", `{"size": 3}`, "--reason", "black friday", "--wait", "-o", "json")
	var op convergev1.Operation
	unmarshalProto(t, res.stdout, &op)
	if op.GetState() != client.OperationSucceeded || !sameJSON(op.GetOutput().AsMap(), map[string]any{"resized_to": 3, "resource": "q"}) ||
		op.GetReason() != "black friday" || !strings.HasPrefix(op.GetActor(), "api:") {
		t.Errorf("op resize --wait: state %q output %v reason %q actor %q; want succeeded with {resized_to: 3, resource: q}, the reason and an api: actor",
			op.GetState(), op.GetOutput().AsMap(), op.GetReason(), op.GetActor())
	}
	ran := l.waitRecord("the resize operation", func(r lcRecord) bool { return r.Operation != nil && r.Operation.ID == op.GetId() })
	if ran.Trigger != "operation" || ran.Reaction != "resize" {
		t.Errorf("the worker ran the operation as %s; want reaction resize, trigger operation", ran)
	}

	for _, bad := range []struct{ verb, input, want string }{
		{"resize", `{"size": 0}`, "input/size"},
		{"resize", `{"size": 2, "colour": "red"}`, "colour"},
		{"explode", `{}`, "declared verbs: resize"},
	} {
		if res := l.ctl("op", "db/q", bad.verb, "--input", bad.input, "--wait"); res.code == 0 || !strings.Contains(res.stderr, bad.want) {
			t.Errorf("op %s --input %s: want a non-zero exit naming %q:\n%s", bad.verb, bad.input, bad.want, res)
		}
	}
	if ops := l.mustCtl("op", "list", "db/q", "-o", "json").stdout; strings.Count(ops, `"verb"`) != 1 {
		t.Errorf("refused operations were recorded; conctl op list db/q -o json:\n%s", ops)
	}

	res = l.ctl("op", "db/q", "resize", "--input", `{"size": 4, "fail": "no capacity left in the zone"}`, "--wait")
	if res.code != 1 || !strings.Contains(res.stderr, "failed: no capacity left in the zone") {
		t.Errorf("an operation the worker fails terminally: want exit 1 saying it failed with its message:\n%s", res)
	}
	id := regexp.MustCompile(`operation (\S+) \(resize`).FindStringSubmatch(res.stdout)
	if id == nil {
		t.Fatalf("op did not print the operation's id:\n%s", res)
	}
	var failed convergev1.Operation
	unmarshalProto(t, l.mustCtl("op", "get", id[1], "-o", "json").stdout, &failed)
	if failed.GetState() != client.OperationFailed || !strings.Contains(failed.GetMessage(), "no capacity left in the zone") {
		t.Errorf("conctl op get %s: state %q message %q; want failed with the worker's message", id[1], failed.GetState(), failed.GetMessage())
	}
}

// TestStatusSchemaEnforced has the worker report a status its kind's
// status_schema refuses: the resource fails terminally naming the path;
// a spec that makes it report a conforming status makes it Ready.
func TestStatusSchemaEnforced(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(strings.Replace(probeKinds, "reactions:", "status_schema:\n  type: object\n  properties:\n    replicas: {type: integer}\n    seen: {type: object}\nreactions:", 1),
		"kind probe/v1 created")
	l.mustApply("type: resource\nkind: probe\nkind_version: 1\nname: bad\nspec: {report: {replicas: three}}\n")
	r := l.waitPhase("probe", "bad", client.PhaseFailed)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), "status_schema") || !strings.Contains(f.GetMessage(), "/replicas") {
		t.Errorf("a status with replicas: \"three\" against {replicas: integer}: failure %v; want terminal, naming the status_schema and /replicas", f)
	}
	if got := r.GetStatus().GetFields()["replicas"]; got != nil {
		t.Errorf("the refused status was stored: status %v", r.GetStatus().AsMap())
	}

	l.mustApply("type: resource\nkind: probe\nkind_version: 1\nname: bad\nspec: {report: {replicas: 3}}\n")
	if r := l.waitSynced("probe", "bad", 2); r.GetStatus().GetFields()["replicas"].GetNumberValue() != 3 || r.GetFailure() != nil {
		t.Errorf("probe/bad reporting a conforming status: %s status %v; want Ready with replicas 3 and no failure", explain(r), r.GetStatus().AsMap())
	}
}
