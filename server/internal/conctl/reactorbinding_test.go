package conctl_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func addBindings(f *fakeControl) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range []*convergev1.ReactorBinding{
		{Name: "notify-failures", WatchKind: "greeting", Transitions: []string{"failed", "degraded"}, LabelSelector: "team=web",
			ReactorKind: "notifier", ReactorKindVersion: 1},
		{Name: "audit-vpcs", WatchKind: "vpc", WatchKindVersion: 2, Transitions: []string{"created", "deleted"},
			ReactorKind: "audit", ReactorKindVersion: 3, Disabled: true},
	} {
		b.CreatedAt = timestamppb.New(testNow.Add(-25 * time.Hour))
		f.bindings[b.Name] = b
	}
}

func TestGetAndListReactorBindings(t *testing.T) {
	f, url := newFake(t)
	ctx := testContext(t)
	r := run(ctx, url, "", "list", "reactorbindings")
	if r.code != 0 || r.stderr != "No reactor bindings found.\n" {
		t.Fatalf("empty: exit %d, stderr %q", r.code, r.stderr)
	}
	addBindings(f)

	header := "NAME              WATCH        TRANSITIONS       SELECTOR   REACTOR       DISABLED   AGE\n"
	r = run(ctx, url, "", "list", "rb")
	want := header +
		"audit-vpcs        vpc/v2       created,deleted   -          audit/v3      yes        25h\n" +
		"notify-failures   greeting/*   failed,degraded   team=web   notifier/v1   -          25h\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("list: exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}

	r = run(ctx, url, "", "list", "rb", "--watch-kind", "vpc", "-o", "json")
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || got[0]["name"] != "audit-vpcs" {
		t.Fatalf("--watch-kind vpc -o json: %v\n%s", err, r.stdout)
	}

	r = run(ctx, url, "", "get", "reactorbinding", "notify-failures")
	if r.code != 0 || !strings.Contains(r.stdout, "notify-failures   greeting/*   failed,degraded") {
		t.Fatalf("get: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = run(ctx, url, "", "get", "rb", "notify-failures", "-o", "yaml")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "name: notify-failures\nwatch_kind: greeting\ntransitions:\n  - failed\n  - degraded\n") {
		t.Fatalf("get -o yaml: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = run(ctx, url, "", "get", "rb", "nope")
	if r.code != 1 || r.stderr != "error: get reactorbinding nope: reactor binding \"nope\" not found\n" {
		t.Fatalf("get missing: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestDeleteReactorBinding(t *testing.T) {
	f, url := newFake(t)
	addBindings(f)
	ctx := testContext(t)
	r := run(ctx, url, "", "delete", "rb", "audit-vpcs")
	if r.code != 0 || r.stdout != "reactorbinding audit-vpcs deleted\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(ctx, url, "", "delete", "reactorbinding", "audit-vpcs")
	if r.code != 1 || r.stderr != "error: delete reactorbinding audit-vpcs: reactor binding \"audit-vpcs\" not found\n" {
		t.Fatalf("second delete: exit %d, stderr %q", r.code, r.stderr)
	}
}
