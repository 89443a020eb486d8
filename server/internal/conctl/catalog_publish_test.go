package conctl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/testkit"
)

// unchangedKinds is the fake control service answering "unchanged" to a
// kind applied again as it is, as the server does.
type unchangedKinds struct{ *fakeControl }

func (f unchangedKinds) ApplyKind(ctx context.Context, req *convergev1.ApplyKindRequest) (*convergev1.ApplyKindResponse, error) {
	f.mu.Lock()
	old, had := f.kinds[fmt.Sprintf("%s/%d", req.Manifest.Kind, req.Manifest.KindVersion)]
	f.mu.Unlock()
	resp, err := f.fakeControl.ApplyKind(ctx, req)
	if err == nil && had && proto.Equal(old, req.Manifest) {
		resp.Result = "unchanged"
	}
	return resp, err
}

func newPublishFake(t *testing.T) (*fakeControl, string) {
	t.Helper()
	f, _ := newFake(t)
	_, url := testkit.ServeControl(t, unchangedKinds{f})
	return f, url
}

func TestCatalogPublish(t *testing.T) {
	f, url := newPublishFake(t)
	dir := filepath.Join(catalogTestdata, "good", "catalog")
	lines := func(result string) string {
		return strings.ReplaceAll(`kind notifier/v1 R
kind webapp/v1 R
kind webapp/v2 R
kind database/v1 R
resource default/std.graph/stack R
providerconfig webapp/v1/default R
reactorbinding webapp-failures R
`, "R", result)
	}
	r := run(testContext(t), url, "", "catalog", "publish", dir)
	if r.code != 0 || r.stdout != lines("created") || r.stderr != "" {
		t.Fatalf("first publish: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(testContext(t), url, "", "catalog", "publish", dir)
	if r.code != 0 || r.stdout != lines("unchanged") || r.stderr != "" {
		t.Fatalf("second publish: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	calls := strings.Join(f.callLog(), "\n")
	want := strings.Repeat("ApplyKind notifier/1\nApplyKind webapp/1\nApplyKind webapp/2\nApplyKind database/1\nApplyResources 1\n"+
		"ApplyProviderConfig webapp/1/default\nApplyReactorBinding webapp-failures\n", 2)
	if calls+"\n" != want {
		t.Fatalf("calls:\n%s\nwant:\n%s", calls, want)
	}
}

func TestCatalogPublishRefusesProblems(t *testing.T) {
	f, url := newPublishFake(t)
	dir := filepath.Join(catalogTestdata, "owner-mismatch", "catalog")
	r := run(testContext(t), url, "", "catalog", "publish", dir)
	want := filepath.Join(dir, "acme", "web", "v1.yaml") + `:5: owner: is "converge" but the kind is in team acme's directory: owner is the team (C10)` + "\n"
	if r.code != 1 || r.stdout != want ||
		r.stderr != "error: not published: the catalog has 1 problem in 1 file (see conctl catalog check)\n" {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if calls := f.callLog(); len(calls) != 0 {
		t.Fatalf("the server was called: %v", calls)
	}
}

func TestCatalogPublishDryRun(t *testing.T) {
	f, url := newPublishFake(t)
	r := run(testContext(t), url, "", "catalog", "publish", filepath.Join(catalogTestdata, "good", "catalog"), "--dry-run", "-n", "web")
	want := `kind notifier/v1 (dry run)
kind webapp/v1 (dry run)
kind webapp/v2 (dry run)
kind database/v1 (dry run)
resource web/std.graph/stack (dry run)
providerconfig webapp/v1/default (dry run)
reactorbinding webapp-failures (dry run)
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if calls := f.callLog(); len(calls) != 0 {
		t.Fatalf("the server was called: %v", calls)
	}
}

func TestCatalogPublishJSON(t *testing.T) {
	_, url := newPublishFake(t)
	r := run(testContext(t), url, "", "catalog", "publish", filepath.Join(catalogTestdata, "good", "catalog"), "-o", "json")
	var got []struct{ Type, Kind, Name, Result string }
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v\nstdout:\n%s\nstderr:\n%s", r.code, err, r.stdout, r.stderr)
	}
	if len(got) != 7 || got[0].Type != "kind" || got[0].Kind != "notifier" || got[4].Type != "resource" ||
		got[4].Name != "stack" || got[6].Type != "reactorbinding" || got[6].Result != "created" {
		t.Fatalf("report %+v", got)
	}
}
