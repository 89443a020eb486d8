package conctl_test

import (
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestDeleteKind(t *testing.T) {
	f, url := newFake(t)
	f.kinds["greeting/2"] = &convergev1.KindManifest{Kind: "greeting", KindVersion: 2}
	r := run(testContext(t), url, "", "delete", "kinds", "greeting/v2")
	if r.code != 0 || r.stdout != "kind greeting/v2 deleted\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if calls := f.callLog(); len(calls) != 1 || calls[0] != "DeleteKind greeting/2" {
		t.Fatalf("calls = %v", calls)
	}
}

func TestDeleteKindNeedsVersion(t *testing.T) {
	f, url := newFake(t)
	r := run(testContext(t), url, "", "delete", "kind", "greeting")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: delete kind needs NAME/VERSION, e.g. greeting/v1") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if len(f.callLog()) != 0 {
		t.Fatal("nothing may be deleted without a version")
	}
}

func TestDeleteResourceWithoutWait(t *testing.T) {
	f, url := newFake(t)
	f.add(&convergev1.Resource{Namespace: "team-a", Kind: "greeting", Name: "hello", Phase: "Ready"})
	r := run(testContext(t), url, "", "delete", "res", "greeting/hello", "-n", "team-a")
	if r.code != 0 || r.stdout != "resource team-a/greeting/hello deleting\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestDeleteResourceWaitsUntilGone(t *testing.T) {
	f, url := newFake(t)
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: "hello", Phase: "Ready"})
	_, _, done := background(testContext(t), url, "", "delete", "resource", "greeting/hello", "--wait")
	f.waitRegistered(t)
	f.remove("default", "greeting", "hello")
	r := waitResult(t, done)
	if r.code != 0 || r.stdout != "resource default/greeting/hello deleted\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestDeleteResourceWaitTimesOut(t *testing.T) {
	f, url := newFake(t)
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: "stuck", Phase: "Ready",
		Failure: &convergev1.Failure{Message: "teardown: bucket not empty"}})
	r := run(testContext(t), url, "", "delete", "resource", "greeting/stuck", "--wait", "--timeout", "300ms")
	want := "error: timed out after 300ms waiting for resource default/greeting/stuck to be deleted (phase Deleting: teardown: bucket not empty)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}
