package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestOpInvokes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, stdin string
		args        []string
		input       string // as JSON; "" for none
	}{
		{"without input", "", nil, ""},
		{"inline JSON", "", []string{"--input", `{"keep": 2, "tags": ["pre-migration"]}`}, `{"keep":2,"tags":["pre-migration"]}`},
		{"YAML file", "", []string{"--input", writeFile(t, dir, "in.yaml", "keep: 3\nwhen: 2026-12-01\n")}, `{"keep":3,"when":"2026-12-01"}`},
		{"stdin", "keep: 4\n", []string{"--input", "-"}, `{"keep":4}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, url := newFake(t)
			f.add(sampleResource())
			args := append([]string{"op", "greeting/hello-world", "snapshot", "--reason", "before the migration"}, tc.args...)
			r := run(testContext(t), url, tc.stdin, args...)
			if r.code != 0 || r.stdout != "operation op-1 (snapshot on default/greeting/hello-world) pending\n" {
				t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			req := f.lastAction().(*convergev1.InvokeOperationRequest)
			got := ""
			if req.Input != nil {
				raw, _ := protojson.Marshal(req.Input)
				got = strings.NewReplacer(" ", "", "\n", "").Replace(string(raw))
			}
			if req.Verb != "snapshot" || req.Reason != "before the migration" || got != tc.input {
				t.Fatalf("request verb %q, reason %q, input %s; want input %s", req.Verb, req.Reason, got, tc.input)
			}
		})
	}
}

func TestOpInputErrors(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	dir := t.TempDir()
	ctx := testContext(t)
	list := writeFile(t, dir, "list.yaml", "- a\n- b\n")
	for _, tc := range []struct {
		input, want string
	}{
		{`{"keep": }`, "error: --input: line 1: invalid JSON: invalid character '}' looking for beginning of value\n"},
		{list, "error: " + list + ": line 1: want a mapping, got a list\n"},
		{dir + "/missing.yaml", "error: " + dir + "/missing.yaml: no such file or directory\n"},
	} {
		r := run(ctx, url, "", "op", "greeting/hello-world", "snapshot", "--input", tc.input)
		if r.code != 1 || r.stderr != tc.want {
			t.Errorf("--input %s: exit %d, stderr:\n%s\nwant:\n%s", tc.input, r.code, r.stderr, tc.want)
		}
	}
	if f.lastAction() != nil {
		t.Fatal("a bad input must not be sent")
	}
}

func TestOpRefusedByTheServer(t *testing.T) {
	f, url := newFake(t)
	f.failing("InvokeOperation", connect.CodeInvalidArgument, "input.keep: must be >= 1 (the snapshot verb's input_schema)")
	r := run(testContext(t), url, "", "op", "database/orders", "snapshot", "--input", `{"keep": 0}`)
	want := "error: invoke snapshot on resource default/database/orders: input.keep: must be >= 1 (the snapshot verb's input_schema)\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestOpUsage(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, "", "op", "greeting/hello-world")
	want := "error: conctl op needs KIND/NAME VERB, e.g. database/orders snapshot (or: op get ID, op list KIND/NAME)\nRun 'conctl op --help' for usage.\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestOpWaitSucceeds(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	out, _, done := background(testContext(t), url, "", "op", "greeting/hello-world", "snapshot", "--wait")
	if got := f.waitOperationGet(t); got != "op-1" {
		t.Fatalf("polled %q, want op-1", got)
	}
	if !strings.HasPrefix(out.String(), "operation op-1 (snapshot on default/greeting/hello-world) pending\n") {
		t.Fatalf("stdout before the operation finished:\n%s", out.String())
	}
	f.updateOperation("op-1", func(op *convergev1.Operation) { op.State = "running" })
	f.waitOperationGet(t)
	f.updateOperation("op-1", func(op *convergev1.Operation) {
		op.State = "succeeded"
		op.Output = spec(t, map[string]any{"snapshot_id": "snap-42", "bytes": 1048576})
	})
	r := waitResult(t, done)
	want := "" +
		"operation op-1 (snapshot on default/greeting/hello-world) pending\n" +
		"operation op-1 succeeded\n" +
		"Output:\n" +
		"  bytes: 1048576\n" +
		"  snapshot_id: snap-42\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestOpWaitFails(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	_, _, done := background(testContext(t), url, "", "op", "greeting/hello-world", "snapshot", "--wait", "-o", "json")
	f.waitOperationGet(t)
	f.updateOperation("op-1", func(op *convergev1.Operation) {
		op.State, op.Message = "failed", "disk full on the replica"
	})
	r := waitResult(t, done)
	if r.code != 1 || r.stderr != "error: operation op-1 failed: disk full on the replica\n" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got["state"] != "failed" || got["id"] != "op-1" {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
}

func TestOpWaitTimesOut(t *testing.T) {
	f, url := newFake(t)
	f.add(sampleResource())
	r := run(testContext(t), url, "", "op", "greeting/hello-world", "snapshot", "--wait", "--timeout", "300ms")
	if r.code != 1 || r.stderr != "error: timed out after 300ms waiting for operation op-1 (pending)\n" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

func sampleOperations(t *testing.T, f *fakeControl) {
	t.Helper()
	for i, st := range []string{"succeeded", "failed", "running"} {
		op := &convergev1.Operation{
			Id: "op-" + string(rune('a'+i)), Verb: "snapshot", State: st, Actor: "api:alice", Attempts: 1,
			Resource:    &convergev1.ResourceRef{Namespace: "default", Kind: "greeting", Name: "hello-world"},
			RequestedAt: timestamppb.New(testNow.Add(-time.Duration(30-10*i) * time.Minute)),
		}
		if st == "failed" {
			op.Message = "disk full"
		}
		f.addOperation(op)
	}
}

func TestOpListAndGet(t *testing.T) {
	f, url := newFake(t)
	sampleOperations(t, f)
	ctx := testContext(t)
	r := run(ctx, url, "", "op", "list", "greeting/hello-world")
	want := "" +
		"ID     VERB       STATE       AGE   ACTOR       MESSAGE\n" +
		"op-c   snapshot   running     10m   api:alice   -\n" +
		"op-b   snapshot   failed      20m   api:alice   disk full\n" +
		"op-a   snapshot   succeeded   30m   api:alice   -\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("list: exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}
	r = run(ctx, url, "", "op", "list", "greeting/other")
	if r.code != 0 || r.stderr != "No operations found for resource default/greeting/other.\n" {
		t.Fatalf("empty list: exit %d, stderr %q", r.code, r.stderr)
	}

	f.updateOperation("op-a", func(op *convergev1.Operation) {
		op.Input = spec(t, map[string]any{"keep": 2})
		op.Output = spec(t, map[string]any{"snapshot_id": "snap-1"})
		op.Reason = "nightly"
		op.FinishedAt = timestamppb.New(testNow.Add(-29 * time.Minute))
	})
	r = run(ctx, url, "", "op", "get", "op-a")
	want = `ID:                 op-a
Resource:           default/greeting/hello-world
Verb:               snapshot
State:              succeeded
Requested:          2026-11-29T11:30:00Z (30m ago)
Finished:           2026-11-29T11:31:00Z (29m ago)
Attempts:           1
Actor:              api:alice
Reason:             nightly
Input:
  keep: 2
Output:
  snapshot_id: snap-1
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("get: exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}
	r = run(ctx, url, "", "op", "get", "op-b", "-o", "yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "state: failed\n") || !strings.Contains(r.stdout, "message: disk full\n") {
		t.Fatalf("get -o yaml: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = run(ctx, url, "", "op", "get", "op-zzz")
	if r.code != 1 || r.stderr != "error: get operation op-zzz: operation \"op-zzz\" not found\n" {
		t.Fatalf("get missing: exit %d, stderr %q", r.code, r.stderr)
	}
}
