//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// TestWalkthroughStepIn is the README's steps 7 and 8, command for
// command: look back, roll back, quarantine and unquarantine, force a
// reconcile, then tune the kind live with `conctl kind policy greeting/1
// --set max_inflight=10 --set resync_interval_seconds=300`, after which new
// resources still become Ready: the capped kind's slots go to the work that
// is queued, not to its resync trigger, which asks for them with nothing to
// run. Then the example app is synced, pruned and planned.
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

	// Step 8: the example app, synced; then a file removed, the plan
	// printed, and the prune.
	app := filepath.Join(t.TempDir(), "greetings")
	if err := os.CopyFS(app, os.DirFS(repoFile(t, "sdk-go/examples/leaf/greetings"))); err != nil {
		t.Fatal(err)
	}
	mustCtl("", "synced app greetings", "sync", app, "--prune", "--wait")
	waitGreeting(t, srv, "eli", 1, "Ready")
	if err := os.Remove(filepath.Join(app, "team", "eli.yaml")); err != nil {
		t.Fatal(err)
	}
	plan := mustCtl("", "default/greeting/eli", "sync", app, "--prune", "--dry-run")
	if !strings.Contains(plan.stdout, "delete") {
		t.Fatalf("the dry run should plan eli's deletion:\n%s", plan)
	}
	t.Logf("the dry run printed:\n%s", plan.stdout)
	waitGreeting(t, srv, "eli", 1, "Ready")
	mustCtl("", "synced app greetings", "sync", app, "--prune", "--wait")
	if left := mustCtl("", "dana", "list", "resources", "--kind", "greeting", "-l", "converge.dev/app=greetings"); strings.Contains(left.stdout, "eli") {
		t.Fatalf("eli is still listed after the prune:\n%s", left)
	}
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
