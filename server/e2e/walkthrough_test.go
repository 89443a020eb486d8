//go:build unix

package e2e

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/pgtest"
)

// drainTimeout bounds a worker's exit after SIGTERM.
const drainTimeout = 15 * time.Second

// TestWalkthrough is the README's walkthrough: apply the example kind,
// start the leaf worker, apply resources and wait for them; then a worker
// that fails terminally, and how that failure reads.
func TestWalkthrough(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)

	// The kind and a resource, before any worker runs.
	res := conctl(t, srv, "", "apply", "-f", repoFile(t, "sdk-go/examples/leaf/greeting.yaml"))
	if res.code != 0 || !strings.Contains(res.stdout, "kind greeting/v1 created") ||
		!strings.Contains(res.stdout, "resource default/greeting/hello-world created") {
		t.Fatalf("applying the example manifest:\n%s", res)
	}

	leaf := startLeaf(t, srv, "leaf")
	res = conctl(t, srv, resourceDoc("bob", "Bob"), "apply", "-f", "-", "--wait")
	if res.code != 0 || !strings.Contains(res.stdout, "1 of 1 resources ready") {
		t.Fatalf("apply --wait of a resource the leaf serves:\n%s", res)
	}
	res = conctl(t, srv, "", "get", "resource", "greeting/bob", "-o", "json")
	if res.code != 0 || !strings.Contains(res.stdout, `"phase": "Ready"`) || !strings.Contains(res.stdout, `"message": "Hello, Bob!"`) {
		t.Fatalf("get of a Ready resource: want \"phase\": \"Ready\" and \"message\": \"Hello, Bob!\":\n%s", res)
	}
	checkResourceJSON(t, res.stdout, "Ready", "Hello, Bob!")
	// The resource applied before the worker started was served too.
	waitAllReady(t, srv.api, "greeting", 2, 30*time.Second)

	// The same worker, failing every task terminally.
	leaf.signal(t, syscall.SIGTERM)
	if code := leaf.wait(t, drainTimeout); code != 0 {
		t.Fatalf("leaf exited with code %d after SIGTERM, want 0", code)
	}
	const msg = "the greeting service is down for maintenance"
	startLeaf(t, srv, "leaf -fail-terminal", "-fail-terminal", msg)
	res = conctl(t, srv, resourceDoc("carol", "Carol"), "apply", "-f", "-", "--wait")
	if res.code == 0 || !strings.Contains(res.all(), msg) {
		t.Fatalf("apply --wait of a resource whose worker fails terminally: want a non-zero exit naming %q:\n%s", msg, res)
	}
	res = conctl(t, srv, "", "get", "resource", "greeting/carol", "-o", "json")
	if res.code != 0 {
		t.Fatalf("get of a Failed resource:\n%s", res)
	}
	got := checkResourceJSON(t, res.stdout, "Failed", "")
	if got.Failure.Message != msg || !got.Failure.Terminal {
		t.Fatalf("failure of greeting/carol = %+v, want terminal with message %q\n%s", got.Failure, msg, res.stdout)
	}
	res = conctl(t, srv, "", "get", "resource", "greeting/carol")
	if res.code != 0 || !strings.Contains(res.stdout, "Failed") || !strings.Contains(res.stdout, msg) {
		t.Fatalf("get (table) of a Failed resource: want its phase and %q:\n%s", msg, res)
	}
}

// resourceDoc is a YAML document for a greeting resource.
func resourceDoc(name, greetee string) string {
	return "type: resource\nkind: greeting\nkind_version: 1\nname: " + name + "\nspec: {name: " + greetee + "}\n"
}

// resourceJSON is the part of `conctl get resource -o json` the tests read.
type resourceJSON struct {
	Phase  string `json:"phase"`
	Status struct {
		Message string `json:"message"`
	} `json:"status"`
	Failure struct {
		Message  string `json:"message"`
		Terminal bool   `json:"terminal"`
	} `json:"failure"`
}

// checkResourceJSON parses conctl's JSON for a resource and checks its
// phase and, unless empty, its status message.
func checkResourceJSON(t *testing.T, out, phase, message string) resourceJSON {
	t.Helper()
	var r resourceJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("conctl get -o json printed invalid JSON: %v\n%s", err, out)
	}
	if r.Phase != phase || (message != "" && r.Status.Message != message) {
		t.Fatalf("resource: phase %q, status.message %q; want %q, %q\n%s", r.Phase, r.Status.Message, phase, message, out)
	}
	return r
}
