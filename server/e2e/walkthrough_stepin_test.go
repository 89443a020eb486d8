//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestWalkthroughStepIn is the README's step 7, command for command: look
// back, roll back, quarantine and unquarantine, force a reconcile, then tune
// the kind live with `conctl kind policy greeting/1 --set max_inflight=10
// --set resync_interval_seconds=300`; resources applied after that become
// Ready. (A claim that split the capped kind's slots between its triggers by
// what each asked for left every new greeting Reconciling there: the resync
// trigger asked for all ten slots and took them with nothing to run.)
func TestWalkthroughStepIn(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	mustCtl := func(stdin string, want string, args ...string) ctlResult {
		t.Helper()
		res := conctl(t, srv, stdin, args...)
		if res.code != 0 || !strings.Contains(res.all(), want) {
			t.Fatalf("conctl %s: want exit 0 and %q:\n%s", strings.Join(args, " "), want, res)
		}
		return res
	}
	mustCtl("", "kind greeting/v1 created", "apply", "-f", repoFile(t, "sdk-go/examples/leaf/greeting.yaml"))
	startLeaf(t, srv, "leaf")
	bob := func(greeting string) string {
		return "type: resource\nkind: greeting\nkind_version: 1\nname: bob\nspec: {name: Bob, greeting: " + greeting + "}\n"
	}
	mustCtl(bob("Hi"), "1 of 1 resources ready", "apply", "--wait", "-f", "-")
	mustCtl(bob("Hello"), "1 of 1 resources ready", "apply", "--wait", "-f", "-")
	mustCtl("", "+greeting: Hello", "history", "greeting/bob")
	mustCtl("", "greeting/bob", "rollback", "greeting/bob", "--to", "1", "--reason", "too formal", "--wait")
	if r := greetingAt(t, srv, "bob"); r.Generation != 3 || r.Phase != "Ready" {
		t.Fatalf("after rollback: generation %d phase %s, want 3 Ready", r.Generation, r.Phase)
	}

	mustCtl("", "quarantined", "quarantine", "greeting/bob", "--reason", "investigating")
	mustCtl(resourceDoc("bob", "Robert"), "configured", "apply", "-f", "-")
	mustCtl("", "generation 4 runs once the resource is unquarantined", "describe", "resource", "greeting/bob")
	mustCtl("", "unquarantined", "unquarantine", "greeting/bob")
	waitGreeting(t, srv, "bob", 4, "Ready")
	mustCtl("", "greeting/bob", "reconcile", "greeting/bob", "--reason", "check")
	waitGreeting(t, srv, "bob", 4, "Ready")

	mustCtl("", "greeting/v1", "kind", "policy", "greeting/1", "--set", "max_inflight=10", "--set", "resync_interval_seconds=300")
	var docs strings.Builder
	for i := range 12 {
		fmt.Fprintf(&docs, "---\n%s", resourceDoc(fmt.Sprintf("after-policy-%d", i), fmt.Sprintf("P%d", i)))
	}
	mustCtl(docs.String(), "12 of 12 resources ready", "apply", "--wait", "--timeout", "60s", "-f", "-")
	mustCtl("", "Ready", "describe", "resource", "greeting/after-policy-0")
}

// greetingAt reads a greeting through the client the harness holds.
func greetingAt(t *testing.T, srv *server, name string) struct {
	Generation int64
	Phase      string
} {
	t.Helper()
	r, err := srv.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: "greeting", Name: name})
	if err != nil {
		t.Fatalf("get greeting/%s: %v", name, err)
	}
	res := r.GetResource()
	return struct {
		Generation int64
		Phase      string
	}{res.GetGeneration(), res.GetPhase()}
}

// waitGreeting polls greeting/name until it is at generation gen in phase.
func waitGreeting(t *testing.T, srv *server, name string, gen int64, phase string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := greetingAt(t, srv, name)
		if r.Generation == gen && r.Phase == phase {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("greeting/%s is at generation %d %s, want %d %s", name, r.Generation, r.Phase, gen, phase)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
