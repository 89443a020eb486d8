package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func spec(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// historyFixture stores hello-world with five revisions, oldest first:
// created, scaled up with ports, changed by a value flow, moved to v2 with
// the same spec, and rolled back to generation 2's spec.
func historyFixture(t *testing.T, f *fakeControl, from int) {
	t.Helper()
	v2 := map[string]any{"greeting": "Hello", "replicas": 3, "ports": []any{80, 443}}
	v3 := map[string]any{"greeting": "Hello", "replicas": 3, "ports": []any{443}, "endpoint": "hello.example.com"}
	revs := []*convergev1.Revision{
		{Generation: 1, KindVersion: 1, Spec: spec(t, map[string]any{"greeting": "Hello", "replicas": 1}), Source: "apply", Actor: "api:alice", Time: timestamppb.New(testNow.Add(-72 * time.Hour))},
		{Generation: 2, KindVersion: 1, Spec: spec(t, v2), Source: "apply", Actor: "api:alice", Time: timestamppb.New(testNow.Add(-3 * time.Hour))},
		{Generation: 3, KindVersion: 1, Spec: spec(t, v3), Source: "flow", Actor: "system", Time: timestamppb.New(testNow.Add(-2 * time.Hour))},
		{Generation: 4, KindVersion: 2, Spec: spec(t, v3), Source: "apply", Actor: "api:bob", Time: timestamppb.New(testNow.Add(-30 * time.Minute))},
		{Generation: 5, KindVersion: 2, Spec: spec(t, v2), Source: "rollback", Actor: "api:bob", Time: timestamppb.New(testNow.Add(-2 * time.Minute))},
	}
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", KindVersion: 2, Name: "hello-world", Generation: 5, Phase: "Ready"})
	for _, r := range revs[from:] {
		f.addRevision("default", "greeting", "hello-world", r)
	}
}

func TestHistoryWithDiffs(t *testing.T) {
	f, url := newFake(t)
	historyFixture(t, f, 0)
	r := run(testContext(t), url, "", "history", "greeting/hello-world")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	golden(t, "history.golden", r.stdout)
}

func TestHistoryLimitDiffsAgainstTheRevisionBefore(t *testing.T) {
	f, url := newFake(t)
	historyFixture(t, f, 0)
	r := run(testContext(t), url, "", "history", "greeting/hello-world", "--limit", "2")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	golden(t, "history_limit.golden", r.stdout)
	if r.stderr != "Showing the newest 2 revisions; there are more (raise --limit).\n" {
		t.Fatalf("stderr = %q", r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if n := len(f.historyReq); n != 1 || f.historyReq[0].PageSize != 3 {
		t.Fatalf("history requests %v, want one for 3 revisions (2 and the one before)", f.historyReq)
	}
}

func TestHistoryAgedOutRevisions(t *testing.T) {
	f, url := newFake(t)
	f.keep = 3
	historyFixture(t, f, 2) // generations 1 and 2 are no longer kept
	r := run(testContext(t), url, "", "history", "greeting/hello-world")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	golden(t, "history_aged_out.golden", r.stdout)
}

func TestHistoryWithoutDiffs(t *testing.T) {
	f, url := newFake(t)
	historyFixture(t, f, 0)
	r := run(testContext(t), url, "", "history", "greeting/hello-world", "--no-diff")
	want := "" +
		"GEN   WHEN                             SOURCE     ACTOR\n" +
		"5     2026-11-29T11:58:00Z (2m ago)    rollback   api:bob\n" +
		"4     2026-11-29T11:30:00Z (30m ago)   apply      api:bob\n" +
		"3     2026-11-29T10:00:00Z (2h ago)    flow       system\n" +
		"2     2026-11-29T09:00:00Z (3h ago)    apply      api:alice\n" +
		"1     2026-11-26T12:00:00Z (3d ago)    apply      api:alice\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestHistoryFollowsPages(t *testing.T) {
	f, url := newFake(t)
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: "busy"})
	for g := int64(1); g <= 250; g++ {
		f.addRevision("default", "greeting", "busy", &convergev1.Revision{Generation: g, Source: "apply"})
	}
	r := run(testContext(t), url, "", "history", "greeting/busy", "--limit", "240", "--no-diff", "-o", "json")
	var revs []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &revs); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, r.stdout)
	}
	if len(revs) != 240 || revs[0]["generation"] != "250" || revs[239]["generation"] != "11" {
		t.Fatalf("got %d revisions from %v to %v", len(revs), revs[0]["generation"], revs[len(revs)-1]["generation"])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var sizes []int32
	for _, req := range f.historyReq {
		sizes = append(sizes, req.PageSize)
	}
	if len(sizes) != 3 || sizes[0] != 100 || sizes[1] != 100 || sizes[2] != 40 {
		t.Fatalf("page sizes %v, want [100 100 40]", sizes)
	}
}

func TestHistoryErrors(t *testing.T) {
	f, url := newFake(t)
	ctx := testContext(t)
	r := run(ctx, url, "", "history", "greeting/missing")
	if r.code != 1 || r.stderr != "error: history of default/greeting/missing: resource default/greeting/missing not found\n" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(ctx, url, "", "history", "greeting/x", "--limit", "0")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: --limit: 0 is not positive\n") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = run(ctx, url, "", "history", "greeting/x", "--diff", "--no-diff")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: --diff and --no-diff: choose one\n") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: "new"})
	r = run(ctx, url, "", "history", "greeting/new")
	if r.code != 0 || r.stdout != "" || r.stderr != "No revisions found for resource default/greeting/new.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
