package conctl_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/conctl"
	"github.com/convergehq/converge/server/internal/testkit"
)

const kindDoc = `type: manifest
kind: greeting
kind_version: 1
spec_schema: {type: object}
`

func resourceDocs(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "---\ntype: resource\nkind: greeting\nkind_version: 1\nname: %s\nspec: {greeting: hi}\n", n)
	}
	return b.String()
}

func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestApplyKindsFirstThenResourcesInBatches(t *testing.T) {
	f, url := newFake(t)
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("[")
	for i := range 2500 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"type":"resource","kind":"greeting","kind_version":1,"name":"r%04d"}`, i)
	}
	b.WriteString("]")
	// The resources come first on the command line; the kind must still go first.
	res := writeFile(t, dir, "resources.json", b.String())
	kind := writeFile(t, dir, "kind.yaml", kindDoc)

	r := run(testContext(t), url, "", "apply", "-f", res, "-f", kind)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	want := []string{"ApplyKind greeting/1", "ApplyResources 1000", "ApplyResources 1000", "ApplyResources 500"}
	if got := f.callLog(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2501 {
		t.Fatalf("got %d output lines, want 2501", len(lines))
	}
	if lines[0] != "kind greeting/v1 created" || lines[1] != "resource default/greeting/r0000 created" {
		t.Fatalf("first lines = %q", lines[:2])
	}
}

func TestApplyReportsServerResultWords(t *testing.T) {
	_, url := newFake(t)
	ctx := testContext(t)
	docs := kindDoc + resourceDocs("hello-world")
	if r := run(ctx, url, docs, "apply", "-f", "-"); r.code != 0 {
		t.Fatalf("first apply: exit %d: %s", r.code, r.stderr)
	}
	r := run(ctx, url, docs, "apply", "-f", "-", "-n", "default")
	want := "kind greeting/v1 configured\nresource default/greeting/hello-world unchanged\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestApplyParsesEverythingBeforeSending(t *testing.T) {
	f, url := newFake(t)
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", kindDoc+resourceDocs("a"))
	bad := writeFile(t, dir, "bad.yaml", "type: resource\nkind: greeting\nkind_version: 1\nname: b\nspce: {}\n")

	r := run(testContext(t), url, "", "apply", "-f", good, "-f", bad)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1", r.code)
	}
	want := "error: " + bad + `: document 1 (line 5): unknown field "spce" (did you mean "spec"?)` + "\n"
	if r.stderr != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if calls := f.callLog(); len(calls) != 0 {
		t.Fatalf("calls = %v, want none: a bad input applies nothing", calls)
	}
}

func TestApplyRefusesDuplicates(t *testing.T) {
	f, url := newFake(t)
	r := run(testContext(t), url, resourceDocs("a", "a"), "apply", "-f", "-")
	want := "error: stdin: document 2 (line 8): resource default/greeting/a is also in stdin: document 1 (line 2)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	if len(f.callLog()) != 0 {
		t.Fatal("a duplicate must apply nothing")
	}
}

func TestApplyBatchErrorNamesTheDocument(t *testing.T) {
	f, url := newFake(t)
	f.batchErr = connect.NewError(connect.CodeInvalidArgument, errors.New("resources[1].spec: missing property 'greeting'"))
	r := run(testContext(t), url, resourceDocs("a", "b"), "apply", "-f", "-")
	want := "error: apply resources 1-2 of 2 (nothing in this batch was applied): resources[1].spec: missing property 'greeting' (resources[1] is stdin: document 2 (line 8))\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestApplyWaitSucceeds(t *testing.T) {
	f, url := newFake(t)
	out, _, done := background(testContext(t), url, resourceDocs("a", "b"), "apply", "-f", "-", "--wait")
	f.waitRegistered(t)
	testkit.Poll(t, "the first progress line", out.String, func(s string) bool {
		return strings.Contains(s, "waiting: 0/2 ready, 2 reconciling\n")
	})
	f.setPhase("default", "greeting", "a", "Ready", "")
	f.setPhase("default", "greeting", "b", "Degraded", "child x is Reconciling")
	f.setPhase("default", "greeting", "b", "Ready", "")

	r := waitResult(t, done)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr: %s\nstdout: %s", r.code, r.stderr, r.stdout)
	}
	if !strings.HasSuffix(r.stdout, "waiting: 2/2 ready\n2 of 2 resources ready\n") {
		t.Errorf("stdout does not end with success:\n%s", r.stdout)
	}
}

func TestApplyWaitReportsFailures(t *testing.T) {
	f, url := newFake(t)
	_, _, done := background(testContext(t), url, resourceDocs("a", "b", "c"), "apply", "-f", "-", "--wait")
	f.waitRegistered(t)
	f.setPhase("default", "greeting", "a", "Ready", "")
	f.setPhase("default", "greeting", "b", "Failed", "quota exceeded for region eu-west-1")
	f.setPhase("default", "greeting", "c", "Ready", "")

	r := waitResult(t, done)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1; stdout:\n%s", r.code, r.stdout)
	}
	if !strings.Contains(r.stdout, "failed: resource default/greeting/b: quota exceeded for region eu-west-1\n") {
		t.Errorf("stdout lacks the failure:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "waiting: 2/3 ready, 1 failed\n") {
		t.Errorf("stdout lacks the final progress:\n%s", r.stdout)
	}
	if r.stderr != "error: 1 of 3 resources failed\n" {
		t.Errorf("stderr = %q", r.stderr)
	}
}

func TestApplyWaitTimesOutNamingStragglers(t *testing.T) {
	f, url := newFake(t)
	_, _, done := background(testContext(t), url, resourceDocs("a", "b"), "apply", "-f", "-", "--wait", "--timeout", "500ms")
	f.waitRegistered(t)
	f.setPhase("default", "greeting", "a", "Ready", "")

	r := waitResult(t, done)
	want := "error: timed out after 500ms waiting for 1 of 2 resources: default/greeting/b (Reconciling)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestApplyWaitListsLargeGroups(t *testing.T) {
	f, url := newFake(t)
	var names []string
	for i := range 30 {
		names = append(names, fmt.Sprintf("r%02d", i))
	}
	_, _, done := background(testContext(t), url, resourceDocs(names...), "apply", "-f", "-", "--wait", "-o", "json")
	f.waitRegistered(t)
	for _, n := range names {
		f.setPhase("default", "greeting", n, "Ready", "")
	}
	r := waitResult(t, done)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f.mu.Lock()
	lists := len(f.listReqs)
	f.mu.Unlock()
	if lists == 0 {
		t.Error("30 resources of one kind were not read with a listing")
	}
	if !strings.Contains(r.stdout, `"phase": "Ready"`) || !strings.HasPrefix(r.stdout, "[") {
		t.Errorf("-o json report:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "waiting: 30/30 ready") {
		t.Errorf("progress did not go to stderr with -o json:\n%s", r.stderr)
	}
}

func waitResult(t *testing.T, done <-chan result) result {
	t.Helper()
	return testkit.ReceiveWithin(t, 20*time.Second, done, "conctl to finish")
}

func TestApplyWaitRewritesProgressOnATerminal(t *testing.T) {
	f, url := newFake(t)
	out, errOut := &testkit.Buffer{}, &testkit.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- conctl.Run(testContext(t), []string{"apply", "-f", "-", "--wait", "--server", url},
			conctl.WithStdio(strings.NewReader(resourceDocs("a", "b")), out, errOut),
			conctl.WithTerminal(true))
	}()
	f.waitRegistered(t)
	testkit.Poll(t, "the first progress line", out.String, func(s string) bool { return strings.Contains(s, "waiting: 0/2") })
	f.setPhase("default", "greeting", "a", "Ready", "")
	f.setPhase("default", "greeting", "b", "Ready", "")
	if code := testkit.ReceiveWithin(t, 20*time.Second, done, "conctl to finish"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	got := out.String()
	if !strings.Contains(got, "\r\x1b[Kwaiting: 0/2 ready, 2 reconciling\r\x1b[K") ||
		!strings.HasSuffix(got, "\r\x1b[Kwaiting: 2/2 ready\n2 of 2 resources ready\n") {
		t.Fatalf("progress was not rewritten in place:\n%q", got)
	}
}

func TestApplyDeletionPolicy(t *testing.T) {
	f, url := newFake(t)
	ctx := testContext(t)
	doc := "type: resource\nkind: greeting\nkind_version: 1\nname: kept\ndeletion_policy: retain\nspec: {greeting: hi}\n"
	r := run(ctx, url, doc, "apply", "-f", "-")
	if r.code != 0 || r.stdout != "resource default/greeting/kept created\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	f.mu.Lock()
	got := f.resources[rkey("default", "greeting", "kept")].GetDeletionPolicy()
	f.mu.Unlock()
	if got != "retain" {
		t.Fatalf("the server got deletion_policy %q, want retain", got)
	}

	bad := strings.Replace(doc, "retain", "keep", 1)
	r = run(ctx, url, bad, "apply", "-f", "-")
	want := "error: stdin: document 1 (line 5): deletion_policy: \"keep\" is not one of delete, retain (or leave it out for the default)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
	if calls := f.callLog(); len(calls) != 1 {
		t.Fatalf("calls %v: the bad document must not reach the server", calls)
	}
}
