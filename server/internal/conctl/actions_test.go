package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/testkit"
)

// lastAction is the request of the last operator action the fake served.
func (f *fakeControl) lastAction() proto.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.actions) == 0 {
		return nil
	}
	return f.actions[len(f.actions)-1]
}

func TestRollback(t *testing.T) {
	f, url := newFake(t)
	historyFixture(t, f, 0)
	r := run(testContext(t), url, "", "rollback", "greeting/hello-world", "--to", "1", "--reason", "replicas: 3 was too many")
	if r.code != 0 || r.stdout != "resource default/greeting/hello-world rolled back to generation 1 (now generation 6)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	req, ok := f.lastAction().(*convergev1.RollbackResourceRequest)
	if !ok || req.Generation != 1 || req.Reason != "replicas: 3 was too many" || req.Namespace != "default" {
		t.Fatalf("request = %v", req)
	}
}

func TestRollbackToARevisionNoLongerKept(t *testing.T) {
	f, url := newFake(t)
	historyFixture(t, f, 2)
	r := run(testContext(t), url, "", "rollback", "greeting/hello-world", "--to", "1")
	want := "error: rollback resource default/greeting/hello-world: revision 1 of default/greeting/hello-world is not kept (the last 50 revisions are); see conctl history\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestRollbackNeedsAGeneration(t *testing.T) {
	f, url := newFake(t)
	r := run(testContext(t), url, "", "rollback", "greeting/hello-world")
	want := "error: --to: want the generation to roll back to (a positive number; see conctl history greeting/hello-world)\nRun 'conctl rollback --help' for usage.\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if f.lastAction() != nil {
		t.Fatal("nothing may be sent without --to")
	}
}

func TestRollbackWait(t *testing.T) {
	for _, tc := range []struct {
		name, phase, msg string
		code             int
		stdout, stderr   string
	}{
		{"ready", "Ready", "", 0,
			"resource default/greeting/hello-world rolled back to generation 2 (now generation 6)\nresource default/greeting/hello-world ready at generation 6\n", ""},
		{"failed", "Failed", "spec.replicas: quota exceeded", 1,
			"resource default/greeting/hello-world rolled back to generation 2 (now generation 6)\n",
			"error: resource default/greeting/hello-world failed at generation 6: spec.replicas: quota exceeded\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, url := newFake(t)
			historyFixture(t, f, 0)
			_, _, done := background(testContext(t), url, "", "rollback", "greeting/hello-world", "--to", "2", "--wait")
			f.waitRegistered(t)
			f.setPhase("default", "greeting", "hello-world", tc.phase, tc.msg)
			r := waitResult(t, done)
			if r.code != tc.code || r.stdout != tc.stdout || r.stderr != tc.stderr {
				t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

func TestRollbackWaitJSON(t *testing.T) {
	f, url := newFake(t)
	historyFixture(t, f, 0)
	_, _, done := background(testContext(t), url, "", "rollback", "greeting/hello-world", "--to", "2", "--wait", "-o", "json")
	f.waitRegistered(t)
	f.setPhase("default", "greeting", "hello-world", "Ready", "")
	r := waitResult(t, done)
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("exit %d: stdout is not one JSON object: %v\n%s", r.code, err, r.stdout)
	}
	if r.code != 0 || got["phase"] != "Ready" || got["generation"] != "6" {
		t.Fatalf("exit %d, resource %v", r.code, got)
	}
}

func TestQuarantineAndUnquarantine(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	ctx := testContext(t)

	r := run(ctx, url, "", "quarantine", "greeting/hello-world")
	want := "error: --reason is required: say why the resource is quarantined (it is recorded in its events)\nRun 'conctl quarantine --help' for usage.\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("no reason: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	r = run(ctx, url, "", "quarantine", "greeting/hello-world", "--reason", "crashes its worker")
	if r.code != 0 || r.stdout != "resource default/greeting/hello-world quarantined\n" {
		t.Fatalf("quarantine: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if q, ok := f.lastAction().(*convergev1.QuarantineResourceRequest); !ok || q.Reason != "crashes its worker" {
		t.Fatalf("request = %v", f.lastAction())
	}

	r = run(ctx, url, "", "unquarantine", "greeting/hello-world", "-o", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "phase: Reconciling\n") || strings.Contains(r.stdout, "unquarantined") {
		t.Fatalf("unquarantine -o yaml: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if u, ok := f.lastAction().(*convergev1.UnquarantineResourceRequest); !ok || u.Reason != "" || u.Name != "hello-world" {
		t.Fatalf("request = %v", f.lastAction())
	}

	r = run(ctx, url, "", "unquarantine", "greeting/gone", "--reason", "fixed")
	if r.code != 1 || r.stderr != "error: unquarantine resource default/greeting/gone: resource default/greeting/gone not found\n" {
		t.Fatalf("unquarantine missing: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestQuarantineRefused(t *testing.T) {
	f, url := newFake(t)
	f.failing("QuarantineResource", connect.CodeFailedPrecondition, "resource default/greeting/hello-world is being deleted; quarantine it before deleting it, or let the teardown finish")
	r := run(testContext(t), url, "", "quarantine", "greeting/hello-world", "--reason", "stuck")
	want := "error: quarantine resource default/greeting/hello-world: resource default/greeting/hello-world is being deleted; quarantine it before deleting it, or let the teardown finish\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestReconcile(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	r := run(testContext(t), url, "", "reconcile", "greeting/hello-world", "--reason", "quota raised")
	if r.code != 0 || r.stdout != "resource default/greeting/hello-world reconcile requested\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if q, ok := f.lastAction().(*convergev1.ReconcileResourceRequest); !ok || q.Reason != "quota raised" {
		t.Fatalf("request = %v", f.lastAction())
	}
	r = run(testContext(t), url, "", "reconcile", "greeting/missing")
	if r.code != 1 || r.stderr != "error: reconcile resource default/greeting/missing: resource default/greeting/missing not found\n" {
		t.Fatalf("missing: exit %d, stderr %q", r.code, r.stderr)
	}
}

// A forced reconcile of a Ready resource leaves it Ready: no change reaches
// the Watch stream, and the wait must see the reconcile count go up.
func TestReconcileWaitSeesAReconcileWithoutAPhaseChange(t *testing.T) {
	f, url := newFake(t)
	res := sampleResource()
	res.Phase, res.Failure, res.SyncedGeneration = "Ready", nil, res.Generation
	f.add(res)
	_, _, done := background(testContext(t), url, "", "reconcile", "greeting/hello-world", "--wait")
	f.waitRegistered(t)
	testkit.Eventually(t, "the first read of the resource", func() bool { return f.gets() > 0 })
	f.reconciled("default", "greeting", "hello-world", "Ready")
	r := waitResult(t, done)
	want := "resource default/greeting/hello-world reconcile requested\nresource default/greeting/hello-world ready at generation 3\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestReconcileWaitFailsAgain(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource()) // Failed terminally at generation 3
	_, _, done := background(testContext(t), url, "", "reconcile", "greeting/hello-world", "--wait")
	f.waitRegistered(t)
	f.setPhase("default", "greeting", "hello-world", "Reconciling", "")
	f.setPhase("default", "greeting", "hello-world", "Failed", "quota still exceeded")
	r := waitResult(t, done)
	if r.code != 1 || r.stderr != "error: resource default/greeting/hello-world failed at generation 3: quota still exceeded\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestReconcileWaitStopsOnQuarantine(t *testing.T) {
	f, url := newFake(t)
	res := sampleResource()
	res.Phase = "Quarantined"
	f.add(res)
	r := run(testContext(t), url, "", "reconcile", "greeting/hello-world", "--wait")
	want := "error: resource default/greeting/hello-world is quarantined: no work runs for it until \"conctl unquarantine greeting/hello-world\"\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestReconcileWaitTimesOut(t *testing.T) {
	f, url := newFake(t)
	res := sampleResource()
	res.Phase, res.Failure = "Reconciling", nil
	res.Conditions = nil
	f.add(res)
	r := run(testContext(t), url, "", "reconcile", "greeting/hello-world", "--wait", "--timeout", "300ms")
	// On a slow machine the wait may end before its first read.
	want := "error: timed out after 300ms waiting for resource default/greeting/hello-world (phase Reconciling)\n"
	unread := "error: timed out after 300ms waiting for resource default/greeting/hello-world (not yet read)\n"
	if r.code != 1 || (r.stderr != want && r.stderr != unread) {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}
