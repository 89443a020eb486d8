package conctl_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestListResourcesFollowsPagesUpToTheLimit(t *testing.T) {
	f, url := newFake(t)
	for i := range 250 {
		f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: fmt.Sprintf("r%03d", i), Phase: "Ready"})
	}
	r := run(testContext(t), url, "", "list", "resources", "--limit", "220")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 221 { // header + 220
		t.Fatalf("got %d lines, want a header and 220 rows", len(lines))
	}
	if !strings.Contains(lines[220], "r219") {
		t.Errorf("last row = %q, want r219", lines[220])
	}
	if !strings.Contains(r.stderr, "Showing the first 220; there are more") {
		t.Errorf("stderr = %q, want a note that more exist", r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var sizes, tokens []string
	for _, req := range f.listReqs {
		sizes = append(sizes, fmt.Sprint(req.PageSize))
		tokens = append(tokens, req.PageToken)
		if !req.Summary || req.Namespace != "default" {
			t.Errorf("request %v: want a summary listing of namespace default", req)
		}
	}
	if strings.Join(sizes, ",") != "220,120,20" || strings.Join(tokens, ",") != ",100,200" {
		t.Errorf("page sizes %v and tokens %q, want 220,120,20 after tokens '',100,200", sizes, tokens)
	}
}

func TestListResourcesAllPagesAsJSON(t *testing.T) {
	f, url := newFake(t)
	for i := range 150 {
		f.add(&convergev1.Resource{Namespace: fmt.Sprintf("ns%d", i%2), Kind: "greeting", Name: fmt.Sprintf("r%03d", i), Phase: "Failed",
			Labels: map[string]string{"team": "web"}})
	}
	r := run(testContext(t), url, "", "list", "res", "-A", "--phase", "failed", "--kind", "greeting", "-l", "team=web", "-o", "json")
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not a JSON list: %v\n%s", err, r.stdout)
	}
	if len(got) != 150 {
		t.Fatalf("got %d resources, want all 150", len(got))
	}
	f.mu.Lock()
	req := f.listReqs[0]
	f.mu.Unlock()
	if req.Namespace != "" || req.Kind != "greeting" || strings.Join(req.Phases, ",") != "Failed" || req.LabelSelector != "team=web" || req.Summary {
		t.Fatalf("request = %v", req)
	}
}

func TestListResourcesRejectsUnknownPhase(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, "", "list", "resources", "--phase", "Broken")
	want := "error: --phase: \"Broken\" is not one of Deleting, Quarantined, Failed, Orphaned, Degraded, Ready, Reconciling\nRun 'conctl list resources --help' for usage.\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, want)
	}
}

func TestListResourcesEmpty(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, "", "list", "resources", "-n", "team-a")
	if r.code != 0 || r.stdout != "" || r.stderr != "No resources found in namespace team-a.\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestListKinds(t *testing.T) {
	f, url := newFake(t)
	f.kinds["b/1"] = &convergev1.KindManifest{Kind: "b", KindVersion: 1}
	f.kinds["a/2"] = &convergev1.KindManifest{Kind: "a", KindVersion: 2}
	f.kinds["a/1"] = &convergev1.KindManifest{Kind: "a", KindVersion: 1}
	r := run(testContext(t), url, "", "list", "manifests")
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		fields := strings.Fields(line)
		kinds = append(kinds, fields[0]+"/"+fields[1])
	}
	if strings.Join(kinds, " ") != "a/v1 a/v2 b/v1" {
		t.Fatalf("kinds = %v, want sorted by kind and version\n%s", kinds, r.stdout)
	}
}

func TestListResourcesWideShowsOwners(t *testing.T) {
	f, url := newFake(t)
	f.add(acmeResource())
	f.add(routeResource())
	f.add(&convergev1.Resource{Namespace: "default", Kind: "account", Name: "dev", Phase: "Reconciling", Generation: 1,
		Owner: &convergev1.ResourceRef{Namespace: "platform", Kind: "landingzone", Name: "acme"}})

	r := run(testContext(t), url, "", "list", "resources", "-o", "wide")
	want := "" +
		"NAMESPACE   KIND          NAME          VERSION   PHASE         GEN   SYNCED   AGE   OWNER                       MESSAGE\n" +
		"default     account       dev           v0        Reconciling   1     0        -     platform/landingzone/acme   -\n" +
		"default     landingzone   acme          v1        Failed        2     2        60m   -                           vpc/prod-main: CIDR 10.0.0.0/16 overlaps vpc/prod-legacy\n" +
		"default     route         dev-default   v1        Reconciling   1     0        60m   account/dev                 dependency vpc/dev-main is not synced\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.listReqs[0].Summary {
		t.Error("a wide table needs no spec or status: want a summary listing")
	}
}

// TestListExplainsComposites: a composite held back by its children shows
// what the server says of them (the culprit, in its Ready condition), and
// without that the counts conctl tree shows for it, not "-".
func TestListExplainsComposites(t *testing.T) {
	f, url := newFake(t)
	f.add(acmeResource())
	f.add(&convergev1.Resource{Namespace: "default", Kind: "account", KindVersion: 1, Name: "dev", Phase: "Reconciling",
		Rollup: rollup(2, 0, 2, 0)})
	r := run(testContext(t), url, "", "list", "resources")
	for _, want := range []string{
		"account       dev    v1        Reconciling   0     0        -     0/2 ready, 2 reconciling",
		"landingzone   acme   v1        Failed        2     2        60m   vpc/prod-main: " + cidrMessage,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("list does not show %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 0 {
		t.Errorf("exit %d, stderr %s", r.code, r.stderr)
	}
}
