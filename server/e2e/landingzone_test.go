//go:build unix

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// The landing-zone example's kinds.
const (
	kindZone    = "landingzone"
	kindAccount = "account"
	kindVPC     = "vpc"
	kindRoute   = "route"
)

// Names of a landing zone's children for account i (the example's zone.go).
func accountName(zone string, i int) string { return fmt.Sprintf("%s-acct-%d", zone, i) }
func vpcName(zone string, i int) string     { return fmt.Sprintf("%s-vpc-%d", zone, i) }
func routeName(zone string, i int) string   { return fmt.Sprintf("%s-route-%d", zone, i) }

// TestLandingZoneConverges is the composition walkthrough: the example's
// kinds and a zone of 5 accounts applied with conctl; the zone becomes
// Ready once its 15 children are, with each account's id flowed into its
// VPC's spec and each VPC's id into its route's; describe shows the tree
// and the graph API the children, edges and flows.
func TestLandingZoneConverges(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyLandingZoneKinds(t, srv)
	startLandingZone(t, srv, "landingzone")
	const zone, accounts = "lz", 5

	res := conctl(t, srv, zoneDoc(zone, accounts, ""), "apply", "-f", "-", "--wait")
	if res.code != 0 || !strings.Contains(res.stdout, "1 of 1 resources ready") {
		t.Fatalf("apply --wait of a landing zone:\n%s", res)
	}
	root := getResource(t, srv.api, kindZone, zone)
	if r := root.GetRollup(); root.GetPhase() != client.PhaseReady || r.GetTotal() != 3*accounts || r.GetReady() != 3*accounts {
		t.Fatalf("the zone after apply --wait: %s; want Ready with a rollup of %d ready of %d", explain(root), 3*accounts, 3*accounts)
	}
	if len(root.GetRollup().GetCulprits()) != 0 {
		t.Errorf("a Ready zone names culprits: %s", explain(root))
	}

	// The flows: account_id into each VPC's spec, vpc_id into each route's.
	for i := range accounts {
		acct := getResource(t, srv.api, kindAccount, accountName(zone, i))
		vpc := getResource(t, srv.api, kindVPC, vpcName(zone, i))
		route := getResource(t, srv.api, kindRoute, routeName(zone, i))
		for _, r := range []*convergev1.Resource{acct, vpc, route} {
			if r.GetPhase() != client.PhaseReady || r.GetOwner().GetKind() != kindZone || r.GetOwner().GetName() != zone {
				t.Errorf("child %s/%s: %s, owner %v; want Ready, owned by %s/%s", r.GetKind(), r.GetName(), explain(r), r.GetOwner(), kindZone, zone)
			}
		}
		acctID, vpcID := stringField(acct.GetStatus(), "account_id"), stringField(vpc.GetStatus(), "vpc_id")
		if acctID == "" || vpcID == "" {
			t.Fatalf("account %d: status.account_id %q, vpc status.vpc_id %q; want both reported", i, acctID, vpcID)
		}
		if got := stringField(vpc.GetSpec(), "account_id"); got != acctID {
			t.Errorf("vpc/%s: spec.account_id = %q; want the account's status.account_id %q (the flow)", vpc.GetName(), got, acctID)
		}
		if got := stringField(vpc.GetStatus(), "account_id"); got != acctID {
			t.Errorf("vpc/%s: status.account_id = %q; want %q: the VPC ran before the flow arrived", vpc.GetName(), got, acctID)
		}
		if got := stringField(route.GetSpec(), "vpc_id"); got != vpcID {
			t.Errorf("route/%s: spec.vpc_id = %q; want the VPC's status.vpc_id %q (the flow)", route.GetName(), got, vpcID)
		}
	}

	checkZoneDescribe(t, srv, zone, accounts)
	checkZoneGraph(t, srv.api, zone, accounts)
}

// checkZoneDescribe checks that `conctl describe` shows the zone's rollup
// and its tree with every child.
func checkZoneDescribe(t *testing.T, srv *server, zone string, accounts int) {
	t.Helper()
	res := conctl(t, srv, "", "describe", "resource", kindZone+"/"+zone)
	n := 3 * accounts
	if res.code != 0 || !regexp.MustCompile(`(?m)^Phase:\s+Ready$`).MatchString(res.stdout) ||
		!regexp.MustCompile(fmt.Sprintf(`(?m)^Rollup:\s+%d/%d ready$`, n, n)).MatchString(res.stdout) ||
		!regexp.MustCompile(`(?m)^Tree:$`).MatchString(res.stdout) {
		t.Fatalf("describe of a Ready zone: want Phase Ready, Rollup %d/%d ready and a Tree:\n%s", n, n, res)
	}
	tree := res.stdout[strings.Index(res.stdout, "\nTree:"):]
	for i := range accounts {
		for _, child := range []string{kindAccount + "/" + accountName(zone, i), kindVPC + "/" + vpcName(zone, i), kindRoute + "/" + routeName(zone, i)} {
			if !regexp.MustCompile(regexp.QuoteMeta(child) + `\s+Ready\b`).MatchString(tree) {
				t.Errorf("describe's tree does not show %s as Ready:\n%s", child, tree)
			}
		}
	}
}

// checkZoneGraph checks GetResourceGraph: the zone and its children, and
// an edge with its flow from each VPC to its account and each route to
// its VPC.
func checkZoneGraph(t *testing.T, c *client.Client, zone string, accounts int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	g, err := c.GetResourceGraph(ctx, &convergev1.GetResourceGraphRequest{Kind: kindZone, Name: zone})
	if err != nil {
		t.Fatalf("GetResourceGraph %s/%s: %v", kindZone, zone, err)
	}
	if n := len(g.GetNodes()); n != 3*accounts+1 || g.GetMoreNodes() != 0 {
		t.Fatalf("the graph has %d nodes (%d more); want %d: the zone and its children", n, g.GetMoreNodes(), 3*accounts+1)
	}
	if first := g.GetNodes()[0].GetResource(); first.GetKind() != kindZone || first.GetName() != zone {
		t.Errorf("the graph's first node is %v; want the zone itself", first)
	}
	type end struct{ kind, name string }
	type want struct {
		dependency end
		from, to   string
	}
	wanted := map[end]want{}
	for i := range accounts {
		wanted[end{kindVPC, vpcName(zone, i)}] = want{end{kindAccount, accountName(zone, i)}, "/account_id", "/account_id"}
		wanted[end{kindRoute, routeName(zone, i)}] = want{end{kindVPC, vpcName(zone, i)}, "/vpc_id", "/vpc_id"}
	}
	if len(g.GetEdges()) != len(wanted) {
		t.Errorf("the graph has %d edges; want %d", len(g.GetEdges()), len(wanted))
	}
	for _, e := range g.GetEdges() {
		dependent := end{e.GetDependent().GetKind(), e.GetDependent().GetName()}
		w, ok := wanted[dependent]
		delete(wanted, dependent)
		flows := e.GetFlows()
		switch {
		case !ok:
			t.Errorf("unexpected edge %v -> %v", e.GetDependent(), e.GetDependency())
		case e.GetDependency().GetKind() != w.dependency.kind || e.GetDependency().GetName() != w.dependency.name:
			t.Errorf("edge from %v goes to %v; want %s/%s", e.GetDependent(), e.GetDependency(), w.dependency.kind, w.dependency.name)
		case len(flows) != 1 || flows[0].GetFrom() != w.from || flows[0].GetTo() != w.to:
			t.Errorf("edge %v -> %v has flows %v; want one from %s to %s", e.GetDependent(), e.GetDependency(), flows, w.from, w.to)
		case !e.GetSatisfied():
			t.Errorf("edge %v -> %v is not satisfied in a Ready zone", e.GetDependent(), e.GetDependency())
		}
	}
	for dependent := range wanted {
		t.Errorf("the graph has no edge from %s/%s", dependent.kind, dependent.name)
	}
}

// TestChildFailureNamedOnRoot has one VPC fail terminally: the zone is
// Failed and names it, with its message, on its rollup and its
// ChildrenReady condition, and the VPC's route waits for it. Then the
// worker stops failing and a spec change reaches the VPC: everything
// heals and the zone is Ready again.
func TestChildFailureNamedOnRoot(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	applyLandingZoneKinds(t, srv)
	const zone, accounts, msg = "q", 3, "quota exceeded"
	broken, blocked := vpcName(zone, 1), routeName(zone, 1)
	lz := startLandingZone(t, srv, "landingzone -fail", "-fail", kindVPC+":"+broken+":"+msg)

	res := conctl(t, srv, zoneDoc(zone, accounts, ""), "apply", "-f", "-")
	if res.code != 0 {
		t.Fatalf("apply of a landing zone:\n%s", res)
	}
	// The zone turns Failed as soon as the VPC does; the other children
	// finish in their own time.
	root := waitResource(t, srv.api, kindZone, zone, "Failed with every other child Ready", composeTimeout, func(r *convergev1.Resource) bool {
		ru := r.GetRollup()
		return r != nil && ru.GetFailed() == 1 && ru.GetReady() == 3*accounts-2 && ru.GetReconciling() == 1
	})
	if root.GetPhase() != client.PhaseFailed {
		t.Fatalf("the zone: %s; want Failed", explain(root))
	}
	culprits := root.GetRollup().GetCulprits()
	if len(culprits) == 0 || culprits[0].GetResource().GetKind() != kindVPC || culprits[0].GetResource().GetName() != broken ||
		culprits[0].GetPhase() != client.PhaseFailed || culprits[0].GetMessage() != msg {
		t.Errorf("the zone's culprits: %s; want first vpc/%s, Failed, %q", explain(root), broken, msg)
	}
	c := condition(root, "ChildrenReady")
	if c == nil || c.GetStatus() != "False" || c.GetReason() != "ChildFailed" ||
		!strings.Contains(c.GetMessage(), fmt.Sprintf("vpc/%s is Failed: %s", broken, msg)) {
		t.Errorf("the zone's ChildrenReady condition: %v; want False, ChildFailed, naming vpc/%s is Failed: %s", c, broken, msg)
	}
	// conctl list names the culprit too (it showed "-"), in the words of
	// the condition.
	list := conctl(t, srv, "", "list", "resources", "--kind", kindZone)
	if want := fmt.Sprintf("children ready; vpc/%s is Failed: %s", broken, msg); list.code != 0 || !strings.Contains(list.stdout, want) {
		t.Errorf("conctl list resources --kind %s does not show %q:\n%s", kindZone, want, list)
	}
	route := getResource(t, srv.api, kindRoute, blocked)
	if route.GetPhase() != client.PhaseReconciling || route.GetReconciles() != 0 || !strings.Contains(route.GetWaiting(), "vpc/"+broken) {
		t.Errorf("the failed VPC's route: %s; want Reconciling, never run, waiting naming vpc/%s", explain(route), broken)
	}
	if d := condition(route, "DependenciesReady"); d == nil || d.GetStatus() != "False" || !strings.Contains(d.GetMessage(), "vpc/"+broken) {
		t.Errorf("the route's DependenciesReady condition: %v; want False naming vpc/%s", d, broken)
	}

	// Heal: a worker that does not fail, and a new VPC spec.
	lz.signal(t, syscall.SIGTERM)
	if code := lz.wait(t, drainTimeout); code != 0 {
		t.Fatalf("landingzone exited with code %d after SIGTERM, want 0", code)
	}
	startLandingZone(t, srv, "landingzone")
	if res := conctl(t, srv, zoneDoc(zone, accounts, ", vpc_cidr: 10.1.0.0/16"), "apply", "-f", "-"); res.code != 0 {
		t.Fatalf("apply of the zone with a new vpc_cidr:\n%s", res)
	}
	root = waitPhase(t, srv.api, kindZone, zone, client.PhaseReady)
	if ru := root.GetRollup(); ru.GetReady() != 3*accounts || len(ru.GetCulprits()) != 0 {
		t.Errorf("the healed zone: %s; want all %d children ready and no culprits", explain(root), 3*accounts)
	}
	vpc := getResource(t, srv.api, kindVPC, broken)
	if stringField(vpc.GetSpec(), "cidr") != "10.1.0.0/16" || vpc.GetFailure() != nil {
		t.Errorf("the healed VPC: %s, spec %v; want the new cidr and no failure", explain(vpc), vpc.GetSpec())
	}
	route = getResource(t, srv.api, kindRoute, blocked)
	if id := stringField(vpc.GetStatus(), "vpc_id"); id == "" || stringField(route.GetSpec(), "vpc_id") != id {
		t.Errorf("the healed route's spec.vpc_id = %q; want the VPC's id %q", stringField(route.GetSpec(), "vpc_id"), id)
	}
}
