package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func addKindWithPolicy(f *fakeControl) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.kinds["greeting/1"] = &convergev1.KindManifest{Kind: "greeting", KindVersion: 1,
		Policy: &convergev1.KindPolicy{MaxInflight: 5, TaskDeadlineSeconds: 60, Retired: true}}
}

func TestKindPolicyShow(t *testing.T) {
	f, url := newFake(t)
	addKindWithPolicy(f)
	ctx := testContext(t)
	r := run(ctx, url, "", "kind", "policy", "greeting/v1")
	want := "" +
		"FIELD                     VALUE\n" +
		"max_inflight              5\n" +
		"task_deadline_seconds     60\n" +
		"resync_interval_seconds   0 (never)\n" +
		"resync_recomposes         false\n" +
		"orphan_grace_seconds      0 (prune at once)\n" +
		"max_transient_attempts    0 (server default, 20)\n" +
		"retired                   true\n" +
		"deletion_policy           (delete)\n" +
		"management_policy         (full)\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}

	r = run(ctx, url, "", "kind", "policy", "greeting/v1", "-o", "json")
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("exit %d: %v\n%s", r.code, err, r.stdout)
	}
	if len(got) != 9 || got["max_inflight"] != float64(5) || got["orphan_grace_seconds"] != float64(0) || got["deletion_policy"] != "" {
		t.Fatalf("-o json must show every field: %v", got)
	}
}

func TestKindPolicySet(t *testing.T) {
	f, url := newFake(t)
	addKindWithPolicy(f)
	r := run(testContext(t), url, "", "kind", "policy", "greeting/1",
		"--set", "max_inflight=10", "--set", "retired=false", "--set", "deletionPolicy=retain", "--set", "resync_interval_seconds=600")
	want := "kind greeting/v1 policy updated: max_inflight=10, retired=false, deletion_policy=retain, resync_interval_seconds=600\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	req := f.policyReqs[0]
	if got := strings.Join(req.UpdateMask.GetPaths(), ","); got != "max_inflight,retired,deletion_policy,resync_interval_seconds" {
		t.Fatalf("update_mask = %s", got)
	}
	p := f.kinds["greeting/1"].Policy
	if p.MaxInflight != 10 || p.Retired || p.DeletionPolicy != "retain" || p.ResyncIntervalSeconds != 600 || p.TaskDeadlineSeconds != 60 {
		t.Fatalf("policy now %v: the fields set changed, the others stayed", p)
	}
}

func TestKindPolicyErrors(t *testing.T) {
	f, url := newFake(t)
	addKindWithPolicy(f)
	ctx := testContext(t)
	usage := "\nRun 'conctl kind policy --help' for usage.\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "max_inflght=10"}, "error: --set max_inflght=10: unknown policy field \"max_inflght\"; the fields are max_inflight, task_deadline_seconds, resync_interval_seconds, resync_recomposes, orphan_grace_seconds, max_transient_attempts, retired, deletion_policy, management_policy" + usage},
		{[]string{"--set", "max_inflight"}, "error: --set \"max_inflight\": want FIELD=VALUE, e.g. max_inflight=10" + usage},
		{[]string{"--set", "max_inflight=ten"}, "error: --set max_inflight=ten: want an integer, got \"ten\"" + usage},
		{[]string{"--set", "retired=maybe"}, "error: --set retired=maybe: want true or false, got \"maybe\"" + usage},
		{[]string{"--set", "max_inflight=-1"}, "error: --set max_inflight=-1: must be at least 0 and at most 1000000 (it is -1)" + usage},
		{[]string{"--set", "deletion_policy=keep"}, "error: --set deletion_policy=keep: \"keep\" is not one of delete, retain (or leave it out for the default)" + usage},
		{[]string{"--set", "retired=true", "--set", "retired=false"}, "error: --set retired=false: retired is already set by --set retired=true" + usage},
	} {
		args := append([]string{"kind", "policy", "greeting/v1"}, tc.args...)
		r := run(ctx, url, "", args...)
		if r.code != 1 || r.stderr != tc.want {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant:\n%s", tc.args, r.code, r.stderr, tc.want)
		}
	}
	f.mu.Lock()
	sent := len(f.policyReqs)
	f.mu.Unlock()
	if sent != 0 {
		t.Fatalf("%d policy updates sent; a bad --set must send none", sent)
	}

	r := run(ctx, url, "", "kind", "policy", "greeting")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: kind policy needs KIND/VERSION, e.g. greeting/v1: each version has its own policy\n") {
		t.Fatalf("no version: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(ctx, url, "", "kind", "polcy", "greeting/v1")
	if r.code != 1 || r.stderr != "error: conctl kind: unknown subcommand \"polcy\" (the one there is: policy)\nRun 'conctl kind --help' for usage.\n" {
		t.Fatalf("unknown subcommand: exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(ctx, url, "", "kind", "policy", "nope/v1", "--set", "retired=true")
	if r.code != 1 || r.stderr != "error: update the policy of kind nope/v1: kind nope/v1 not found\n" {
		t.Fatalf("missing kind: exit %d, stderr %q", r.code, r.stderr)
	}
}
