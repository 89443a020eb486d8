package conctl_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// ExplainResource returns the stored explanation.
func (f *fakeControl) ExplainResource(_ context.Context, req *convergev1.ExplainResourceRequest) (*convergev1.ExplainResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ExplainResource %s/%s/%s max=%d", req.Namespace, req.Kind, req.Name, req.MaxCauses)
	e, ok := f.explained[rkey(req.Namespace, req.Kind, req.Name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s/%s/%s not found", req.Namespace, req.Kind, req.Name))
	}
	return e, nil
}

func TestExplainPrintsEachCauseWithItsPathAndUnblock(t *testing.T) {
	f, url := newFake(t)
	ref := func(kind, name string) *convergev1.ResourceRef {
		return &convergev1.ResourceRef{Namespace: "default", Kind: kind, Name: name}
	}
	f.explained[rkey("default", "landingzone", "acme")] = &convergev1.ExplainResourceResponse{
		Resource: ref("landingzone", "acme"), Phase: "Failed",
		Causes: []*convergev1.Cause{
			{Resource: ref("vpc", "acme-vpc"), Phase: "Failed", Reason: "TerminalError",
				Path: []*convergev1.ResourceRef{ref("landingzone", "acme"), ref("account", "acme")}, Via: []string{"child", "child"},
				Message: "attempt 1 failed terminally: quota exceeded", Unblock: "fix the spec and apply it again"},
			{Resource: ref("dns", "acme-dns"), Phase: "Reconciling", Reason: "ReconcileError",
				Path: []*convergev1.ResourceRef{ref("landingzone", "acme")}, Via: []string{"child"},
				Message: "attempt 2 failed: timeout", Until: timestamppb.New(time.Date(2026, 11, 29, 12, 1, 0, 0, time.UTC))},
		},
		Truncated: true,
	}
	res := run(context.Background(), url, "", "explain", "landingzone/acme", "--max-causes", "5")
	for _, want := range []string{
		"landingzone/acme is Failed because of 2 causes:",
		"vpc/acme-vpc (Failed): TerminalError",
		"  path:    landingzone/acme -child-> account/acme -child-> vpc/acme-vpc",
		"  why:     attempt 1 failed terminally: quota exceeded",
		"  unblock: fix the spec and apply it again",
		"  until:   2026-11-29T12:01:00Z",
		"more causes than shown",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, res.stdout)
		}
	}
	if res.code != 0 || !strings.Contains(strings.Join(f.callLog(), "\n"), "ExplainResource default/landingzone/acme max=5") {
		t.Fatalf("exit %d, calls %v", res.code, f.callLog())
	}
	if res := run(context.Background(), url, "", "explain", "landingzone/acme", "-o", "json"); res.code != 0 || !strings.Contains(res.stdout, `"reason": "TerminalError"`) {
		t.Errorf("-o json: %d\n%s", res.code, res.stdout)
	}
	if res := run(context.Background(), url, "", "explain", "landingzone/acme", "--max-causes", "0"); res.code == 0 || !strings.Contains(res.stderr, "--max-causes") {
		t.Errorf("--max-causes 0: %d %s", res.code, res.stderr)
	}
	if res := run(context.Background(), url, "", "explain", "landingzone/nope"); res.code == 0 || !strings.Contains(res.stderr, "not found") {
		t.Errorf("missing resource: %d %s", res.code, res.stderr)
	}
}
