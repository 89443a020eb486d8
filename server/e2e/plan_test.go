//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// planJSON runs conctl plan -o json on doc and decodes the answer.
func planJSON(t *testing.T, s *server, doc string) *convergev1.PlanChangeResponse {
	t.Helper()
	res := conctl(t, s, doc, "plan", "-f", "-", "-o", "json")
	if res.code != 0 {
		t.Fatalf("conctl plan:\n%s", res)
	}
	out := &convergev1.PlanChangeResponse{}
	if err := protojson.Unmarshal([]byte(res.stdout), out); err != nil {
		t.Fatalf("conctl plan -o json printed what does not decode: %v\n%s", err, res)
	}
	return out
}

// zoneChildren lists a landing zone's children by KIND/NAME with their specs
// as JSON.
func zoneChildren(t *testing.T, s *server, kind, name string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	out := map[string]string{}
	for _, k := range []string{kindAccount, kindVPC, kindRoute} {
		list, err := s.api.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: k, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.GetResources() {
			if r.GetOwner().GetKind() == kind && r.GetOwner().GetName() == name {
				out[r.GetKind()+"/"+r.GetName()] = jsonOf(t, r.GetSpec())
			}
		}
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	if m, ok := v.(interface{ AsMap() map[string]any }); ok {
		v = m.AsMap()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestPlanPredictsGoComposer plans a change to a landing zone composed by
// the Go example worker (two accounts to three): the worker composes the
// preview with its own handler; nothing changes; the apply that follows
// creates exactly the children the plan listed, and every child the plan
// said would not wait has the spec the plan showed, flowed values
// included. An apply fenced on the plan goes through while nothing changed.
func TestPlanPredictsGoComposer(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyLandingZoneKinds(t, srv)
	startLandingZone(t, srv, "landingzone")
	const zone = "pz"
	if res := conctl(t, srv, zoneDoc(zone, 2, ""), "apply", "-f", "-", "--wait"); res.code != 0 {
		t.Fatalf("apply --wait:\n%s", res)
	}
	before := zoneChildren(t, srv, kindZone, zone)
	gen := getResource(t, srv.api, kindZone, zone).GetGeneration()

	plan := planJSON(t, srv, zoneDoc(zone, 3, ""))
	if len(plan.GetComposites()) != 1 {
		t.Fatalf("plan: want one composite:\n%s", protojson.Format(plan))
	}
	cp := plan.GetComposites()[0]
	if cp.GetNotPreviewed() != "" || !strings.HasPrefix(cp.GetComposer(), "worker ") {
		t.Fatalf("the zone was not previewed by its worker:\n%s", protojson.Format(cp))
	}
	actions := map[string]string{}
	planned := map[string]*convergev1.PlannedChild{}
	for _, c := range cp.GetChildren() {
		key := c.GetKind() + "/" + c.GetName()
		actions[key], planned[key] = c.GetAction(), c
	}
	want := map[string]string{}
	for i := range 3 {
		action := "unchanged"
		if i == 2 {
			action = "create"
		}
		want[kindAccount+"/"+accountName(zone, i)] = action
		want[kindVPC+"/"+vpcName(zone, i)] = action
		want[kindRoute+"/"+routeName(zone, i)] = action
	}
	if !maps.Equal(actions, want) {
		t.Fatalf("plan actions %v, want %v", actions, want)
	}
	if tot := plan.GetTotals(); tot.GetCreate() != 3 || tot.GetUnchanged() != 6 || tot.GetEdgesAdded() != 2 {
		t.Errorf("plan totals %v; want 3 to create, 6 unchanged, 2 edges added", tot)
	}
	if w := planned[kindVPC+"/"+vpcName(zone, 2)].GetWaiting(); !strings.Contains(w, accountName(zone, 2)) {
		t.Errorf("the new VPC's plan says it waits for %q; want its account named", w)
	}
	// Nothing changed.
	if now := zoneChildren(t, srv, kindZone, zone); !maps.Equal(now, before) {
		t.Fatalf("the plan changed the children: %v, were %v", now, before)
	}
	if g := getResource(t, srv.api, kindZone, zone).GetGeneration(); g != gen {
		t.Fatalf("the plan changed the zone's generation: %d -> %d", gen, g)
	}

	// The fenced apply goes through, and does what the plan said.
	if res := conctl(t, srv, zoneDoc(zone, 3, ""), "apply", "-f", "-", "--wait", "--plan-id", plan.GetPlanId()); res.code != 0 {
		t.Fatalf("apply --plan-id with nothing changed:\n%s", res)
	}
	after := zoneChildren(t, srv, kindZone, zone)
	if got, want := slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(planned)); !slices.Equal(got, want) {
		t.Fatalf("after the apply the children are %v; the plan said %v", got, want)
	}
	for key, c := range planned {
		if c.GetWaiting() != "" {
			continue // its spec waits for a value the plan could not know
		}
		if got, want := after[key], jsonOf(t, c.GetSpecAfter()); got != want {
			t.Errorf("%s after the apply: spec %s; the plan said %s", key, got, want)
		}
	}
}

// TestPlanWithoutComposerSaysSo plans a zone while no worker serves its
// composer: the composite says so, naming the kind, version and reaction,
// rather than guessing; the table output counts it as not previewed.
func TestPlanWithoutComposerSaysSo(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyLandingZoneKinds(t, srv)
	plan := planJSON(t, srv, zoneDoc("nobody", 1, ""))
	if len(plan.GetComposites()) != 1 {
		t.Fatalf("plan: want one composite:\n%s", protojson.Format(plan))
	}
	if got, want := plan.GetComposites()[0].GetNotPreviewed(), "no connected worker serves kind landingzone v1 reaction compose"; got != want {
		t.Errorf("not_previewed = %q; want %q", got, want)
	}
	res := conctl(t, srv, zoneDoc("nobody", 1, ""), "plan", "-f", "-")
	if res.code != 0 || !strings.Contains(res.stdout, "children not previewed: no connected worker serves kind landingzone v1 reaction compose") ||
		!strings.Contains(res.stdout, "1 composite(s) not previewed") {
		t.Errorf("conctl plan's table:\n%s", res)
	}
	// The same over REST.
	body := `{"resources": [{"kind": "landingzone", "kind_version": 1, "name": "nobody", "spec": {"prefix": "nobody", "accounts": 1}}]}`
	resp, err := http.Post(srv.url+"/api/v1/plans", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"not_previewed":"no connected worker serves kind landingzone v1 reaction compose"`) {
		t.Errorf("POST /api/v1/plans: %d %s", resp.StatusCode, raw)
	}
	if _, err := srv.api.GetResource(context.Background(), &convergev1.GetResourceRequest{Kind: kindZone, Name: "nobody"}); err == nil {
		t.Errorf("the plan created the zone")
	}
}

// TestPlanFencesTheApply: an apply with --plan-id is refused once
// something the plan read changed in between (here another apply of the
// zone), naming what changed, and stores nothing.
func TestPlanFencesTheApply(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyLandingZoneKinds(t, srv)
	startLandingZone(t, srv, "landingzone")
	const zone = "fz"
	if res := conctl(t, srv, zoneDoc(zone, 1, ""), "apply", "-f", "-", "--wait"); res.code != 0 {
		t.Fatalf("apply --wait:\n%s", res)
	}
	plan := planJSON(t, srv, zoneDoc(zone, 2, ""))
	if res := conctl(t, srv, zoneDoc(zone, 1, ", vpc_cidr: 10.9.0.0/16"), "apply", "-f", "-", "--wait"); res.code != 0 {
		t.Fatalf("the change in between:\n%s", res)
	}
	gen := getResource(t, srv.api, kindZone, zone).GetGeneration()
	res := conctl(t, srv, zoneDoc(zone, 2, ""), "apply", "-f", "-", "--plan-id", plan.GetPlanId())
	if res.code == 0 || !strings.Contains(res.stderr, "default/landingzone/fz: the resource (its spec, labels, generation, kind version or deletion) changed since plan "+plan.GetPlanId()) {
		t.Fatalf("apply --plan-id after a change in between: want a refusal naming the resource:\n%s", res)
	}
	if g := getResource(t, srv.api, kindZone, zone).GetGeneration(); g != gen {
		t.Fatalf("the refused apply changed the zone: generation %d -> %d", gen, g)
	}
	_, err := srv.api.ApplyResources(context.Background(), &convergev1.ApplyResourcesRequest{PlanId: plan.GetPlanId(),
		Resources: []*convergev1.ApplyResourceRequest{{Kind: kindZone, KindVersion: 1, Name: zone, Spec: plan.GetResources().GetDryRun().GetResources()[0].GetAfter().GetSpec()}}})
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("ApplyResources with the plan_id after a change: %v; want FailedPrecondition", err)
	}
	res = conctl(t, srv, zoneDoc(zone, 2, ""), "apply", "-f", "-", "--plan-id", "plan-nope")
	if res.code == 0 || !strings.Contains(res.stderr, `plan_id "plan-nope": no such plan, or it expired`) {
		t.Fatalf("apply --plan-id of an unknown plan:\n%s", res)
	}

	// Planned again, with the kinds too, and applied with nothing changed
	// in between: the kinds and then the zone go through on the plan.
	kinds := repoFile(t, "sdk-go/examples/landingzone/kinds.yaml")
	res = conctl(t, srv, zoneDoc(zone, 2, ""), "plan", "-f", kinds, "-f", "-", "-o", "json")
	again := &convergev1.PlanChangeResponse{}
	if res.code != 0 || protojson.Unmarshal([]byte(res.stdout), again) != nil || len(again.GetKinds()) != 4 {
		t.Fatalf("plan of the kinds and the zone:\n%s", res)
	}
	if res := conctl(t, srv, zoneDoc(zone, 2, ""), "apply", "-f", kinds, "-f", "-", "--plan-id", again.GetPlanId(), "--wait"); res.code != 0 {
		t.Fatalf("apply --plan-id of the kinds and the zone with nothing changed:\n%s", res)
	}
}

// TestPlanAcrossControlAndBroker runs the API and the broker as separate
// processes, as the chart does: the plan call on the control replica
// hands its preview to the broker holding the worker's stream through the
// database, and gets the worker's answer back.
func TestPlanAcrossControlAndBroker(t *testing.T) {
	begin(t)
	db := pgtest.New(t)
	ctl := startReplica(t, db.URL, "control", 1, true)
	brk := startReplica(t, db.URL, "broker", 1, false)
	applyLandingZoneKinds(t, ctl)
	startLandingZone(t, brk, "landingzone")
	const zone = "sz"
	if res := conctl(t, ctl, zoneDoc(zone, 1, ""), "apply", "-f", "-", "--wait"); res.code != 0 {
		t.Fatalf("apply --wait through the control replica:\n%s", res)
	}
	plan := planJSON(t, ctl, zoneDoc(zone, 2, ""))
	cp := plan.GetComposites()
	if len(cp) != 1 || cp[0].GetNotPreviewed() != "" || plan.GetTotals().GetCreate() != 3 || plan.GetTotals().GetUnchanged() != 3 {
		t.Fatalf("the plan through a separate broker: want the zone previewed, 3 to create and 3 unchanged:\n%s", protojson.Format(plan))
	}
}
