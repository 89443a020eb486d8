//go:build unix

package e2e

import (
	"maps"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// planLine is one child of conctl plan's output: "  + create KIND/NAME".
var planLine = regexp.MustCompile(`(?m)^  [+~-] (create|update|prune|orphan) (\S+)$`)

// TestPlanPredictsGraphChildren plans a change to a std.graph instance (a
// cache added, more replicas) against the running server: stdcel composes
// the preview task the server sends it; plan changes nothing, and the
// apply that follows creates and updates exactly the children the plan
// named, with the specs it showed.
func TestPlanPredictsGraphChildren(t *testing.T) {
	d, _ := celExample(t)
	d.apply(t, readExample(t, "graph.yaml"))
	d.waitPhase(t, "std.graph", "webapp", client.PhaseReady, time.Minute)
	d.apply(t, readExample(t, "instance.yaml"))
	before := d.waitFor(t, "webapp", "shop", "Ready with a projected status", 90*time.Second, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["url"] != nil
	})

	changed := strings.Replace(readExample(t, "instance.yaml"), "replicas: 3", "replicas: 4\n  cache: true", 1)
	res := d.conctl(t, changed, "plan", "-f", "-")
	if res.code != 0 {
		t.Fatalf("%s", res)
	}
	planned := map[string]string{}
	for _, m := range planLine.FindAllStringSubmatch(res.stdout, -1) {
		planned[m[2]] = m[1]
	}
	want := map[string]string{"demo.cache/shop-cache": "create", "demo.database/shop-db": "update", "demo.service/shop": "update"}
	if !maps.Equal(planned, want) {
		t.Fatalf("plan named %v, want %v:\n%s", planned, want, res.stdout)
	}
	for _, line := range []string{
		`resource default/webapp/shop configured (dry run)`,
		`composite default/webapp/shop (worker `,
		`-  "size_gb": 30`, `+  "size_gb": 40`,
		"Plan: 1 child(ren) to create, 2 to update, 0 to prune, 0 to orphan, 0 unchanged, across 1 composite(s); nothing was changed.",
	} {
		if !strings.Contains(res.stdout, line) {
			t.Errorf("plan lacks %q:\n%s", line, res.stdout)
		}
	}
	if now := d.get(t, "webapp", "shop"); now.GetGeneration() != before.GetGeneration() {
		t.Fatalf("plan changed the instance: generation %d -> %d", before.GetGeneration(), now.GetGeneration())
	}
	if _, err := d.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: "demo.cache", Name: "shop-cache"}); err == nil {
		t.Fatalf("plan created the cache")
	}

	res = d.conctl(t, changed, "plan", "-f", "-", "-o", "json")
	plan := &convergev1.PlanChangeResponse{}
	if res.code != 0 || protojson.Unmarshal([]byte(res.stdout), plan) != nil || len(plan.GetComposites()) != 1 {
		t.Fatalf("plan -o json:\n%s", res)
	}

	// The apply does what the plan said.
	d.apply(t, changed)
	d.waitFor(t, "webapp", "shop", "Ready with the cache", 90*time.Second, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["cache"] != nil
	})
	var children []string
	list, err := d.api.ListResources(t.Context(), &convergev1.ListResourcesRequest{LabelSelector: "stdcel.converge.dev/instance=shop"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.GetResources() {
		children = append(children, r.GetKind()+"/"+r.GetName())
	}
	sort.Strings(children)
	if got := strings.Join(children, " "); got != "demo.cache/shop-cache demo.database/shop-db demo.service/shop" {
		t.Errorf("after the apply the children are %s", got)
	}
	for _, c := range plan.GetComposites()[0].GetChildren() {
		if c.GetWaiting() != "" {
			continue // its spec waits for a value the plan could not know
		}
		if got := d.get(t, c.GetKind(), c.GetName()).GetSpec(); !proto.Equal(got, c.GetSpecAfter()) {
			t.Errorf("%s/%s after the apply: spec %v; the plan said %v", c.GetKind(), c.GetName(), got, c.GetSpecAfter())
		}
	}
	if db := d.get(t, "demo.database", "shop-db"); db.GetSpec().GetFields()["size_gb"].GetNumberValue() != 40 {
		t.Errorf("the database after the apply:\n%s", show(db))
	}
	// Nothing left to plan.
	res = d.conctl(t, changed, "plan", "-f", "-")
	if res.code != 0 || !strings.Contains(res.stdout, "Plan: 0 child(ren) to create, 0 to update, 0 to prune, 0 to orphan, 3 unchanged") {
		t.Errorf("a plan of what was applied:\n%s", res)
	}
}
