package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// childLine renders a child as "kind/version/name spec".
func childLine(t *testing.T, c converge.Child) string {
	t.Helper()
	spec, err := json.Marshal(c.Spec)
	if err != nil {
		t.Fatalf("child %s: spec: %v", c.Name, err)
	}
	return fmt.Sprintf("%s/%d/%s %s", c.Kind, c.KindVersion, c.Name, spec)
}

// edgeLine renders an edge as "dependent -> dependency [from -> to]...".
func edgeLine(e converge.Edge) string {
	line := fmt.Sprintf("%s/%s -> %s/%s", e.Dependent.Kind, e.Dependent.Name, e.Dependency.Kind, e.Dependency.Name)
	for _, f := range e.Flows {
		line += fmt.Sprintf(" [%s%s -> %s]", f.From, f.Expr, f.To)
	}
	return line
}

func TestComposeThreeAccounts(t *testing.T) {
	res, err := compose(zoneSpec{Prefix: "demo", Accounts: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compose {
		t.Error("Compose is not set: a zone's answer must always be its whole child set")
	}
	var children []string
	for _, c := range res.Children {
		children = append(children, childLine(t, c))
	}
	wantChildren := []string{
		`account/1/demo-acct-0 {"email":"demo-acct-0@example.com","index":0}`,
		`vpc/1/demo-vpc-0 {"cidr":"10.0.0.0/16","account_id":""}`,
		`route/1/demo-route-0 {"destination":"0.0.0.0/0","vpc_id":""}`,
		`account/1/demo-acct-1 {"email":"demo-acct-1@example.com","index":1}`,
		`vpc/1/demo-vpc-1 {"cidr":"10.0.0.0/16","account_id":""}`,
		`route/1/demo-route-1 {"destination":"0.0.0.0/0","vpc_id":""}`,
		`account/1/demo-acct-2 {"email":"demo-acct-2@example.com","index":2}`,
		`vpc/1/demo-vpc-2 {"cidr":"10.0.0.0/16","account_id":""}`,
		`route/1/demo-route-2 {"destination":"0.0.0.0/0","vpc_id":""}`,
	}
	if !slices.Equal(children, wantChildren) {
		t.Errorf("children:\n%s\nwant:\n%s", strings.Join(children, "\n"), strings.Join(wantChildren, "\n"))
	}
	var edges []string
	for _, e := range res.Edges {
		edges = append(edges, edgeLine(e))
	}
	wantEdges := []string{
		"vpc/demo-vpc-0 -> account/demo-acct-0 [/account_id -> /account_id]",
		"route/demo-route-0 -> vpc/demo-vpc-0 [/vpc_id -> /vpc_id]",
		"vpc/demo-vpc-1 -> account/demo-acct-1 [/account_id -> /account_id]",
		"route/demo-route-1 -> vpc/demo-vpc-1 [/vpc_id -> /vpc_id]",
		"vpc/demo-vpc-2 -> account/demo-acct-2 [/account_id -> /account_id]",
		"route/demo-route-2 -> vpc/demo-vpc-2 [/vpc_id -> /vpc_id]",
	}
	if !slices.Equal(edges, wantEdges) {
		t.Errorf("edges:\n%s\nwant:\n%s", strings.Join(edges, "\n"), strings.Join(wantEdges, "\n"))
	}
	for _, e := range res.Edges {
		if e.Dependent.Namespace != "" || e.Dependency.Namespace != "" {
			t.Errorf("edge %s leaves the composite's namespace", edgeLine(e))
		}
	}
	if len(res.References) != 0 {
		t.Errorf("references = %v; a landing zone reads nothing outside itself", res.References)
	}
	if res.Status != (zoneStatus{Accounts: 3}) {
		t.Errorf("status = %+v; want 3 accounts", res.Status)
	}
}

func TestComposeUsesTheVPCCIDR(t *testing.T) {
	res, err := compose(zoneSpec{Prefix: "p", Accounts: 1, VPCCIDR: "172.16.0.0/12"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Children[1].Spec.(vpcSpec).CIDR; got != "172.16.0.0/12" {
		t.Fatalf("vpc cidr = %q; want the spec's vpc_cidr", got)
	}
}

func TestComposeRejectsABadSpec(t *testing.T) {
	for _, c := range []struct {
		spec zoneSpec
		want string
	}{
		{zoneSpec{Prefix: "", Accounts: 1}, `spec.prefix: "" must be`},
		{zoneSpec{Prefix: "-x", Accounts: 1}, `spec.prefix: "-x" must be`},
		{zoneSpec{Prefix: strings.Repeat("p", 201), Accounts: 1}, "spec.prefix: 201 characters, more than 200"},
		{zoneSpec{Prefix: "x", Accounts: 0}, "spec.accounts: 0 is not between 1 and 10000"},
		{zoneSpec{Prefix: "x", Accounts: 10001}, "spec.accounts: 10001 is not between 1 and 10000"},
	} {
		_, err := compose(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) || !converge.IsTerminal(err) {
			t.Errorf("compose(%+v) = %v; want a terminal error containing %q", c.spec, err, c.want)
		}
	}
}

func TestComposeHandler(t *testing.T) {
	h := &handlers{}
	res, err := h.compose(context.Background(), &converge.Task{Kind: kindZone, Name: "demo",
		Spec: json.RawMessage(`{"prefix":"demo","accounts":2}`)})
	if err != nil || len(res.Children) != 6 || len(res.Edges) != 4 {
		t.Fatalf("compose = %v children, %v edges, %v; want 6, 4, nil", len(res.Children), len(res.Edges), err)
	}
	_, err = h.compose(context.Background(), &converge.Task{Kind: kindZone, Name: "demo", Spec: json.RawMessage(`{"accounts":"two"}`)})
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "decode spec") {
		t.Fatalf("compose of a mistyped spec = %v; want a terminal decode error", err)
	}
}

var idPattern = regexp.MustCompile(`^[a-z]+-[0-9a-f]{12}$`)

func TestLeaves(t *testing.T) {
	task := func(kind, name, spec string) *converge.Task {
		return &converge.Task{Kind: kind, KindVersion: 1, Namespace: "default", Name: name, Spec: json.RawMessage(spec)}
	}
	h := &handlers{}
	cases := []struct {
		name   string
		task   *converge.Task
		status any    // wanted status, when it succeeds
		err    string // wanted terminal error, when it fails
	}{
		{"account", task(kindAccount, "demo-acct-0", `{"email":"demo-acct-0@example.com","index":0}`),
			accountStatus{AccountID: cloudID("acct", "demo-acct-0")}, ""},
		{"vpc", task(kindVPC, "demo-vpc-0", `{"cidr":"10.0.0.0/16","account_id":"acct-0123456789ab"}`),
			vpcStatus{VPCID: cloudID("vpc", "demo-vpc-0"), AccountID: "acct-0123456789ab"}, ""},
		{"vpc without account_id", task(kindVPC, "demo-vpc-0", `{"cidr":"10.0.0.0/16","account_id":""}`),
			nil, "account_id is empty: the flow from the account did not arrive"},
		{"route", task(kindRoute, "demo-route-0", `{"destination":"0.0.0.0/0","vpc_id":"vpc-0123456789ab"}`),
			routeStatus{RouteID: cloudID("route", "demo-route-0")}, ""},
		{"route without vpc_id", task(kindRoute, "demo-route-0", `{"destination":"0.0.0.0/0","vpc_id":""}`),
			nil, "vpc_id is empty: the flow from the VPC did not arrive"},
		{"mistyped spec", task(kindAccount, "demo-acct-0", `{"index":"zero"}`), nil, "decode spec"},
	}
	reconcilers := map[string]func(*converge.Task) (any, error){
		kindAccount: reconcileAccount, kindVPC: reconcileVPC, kindRoute: reconcileRoute,
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := h.leaf(reconcilers[c.task.Kind])(context.Background(), c.task)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !converge.IsTerminal(err) {
					t.Fatalf("error = %v; want a terminal error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != c.status {
				t.Fatalf("status = %+v; want %+v", res.Status, c.status)
			}
		})
	}
}

func TestCloudIDIsDeterministicPerName(t *testing.T) {
	a, b := cloudID("acct", "demo-acct-0"), cloudID("acct", "demo-acct-1")
	if a != cloudID("acct", "demo-acct-0") {
		t.Error("the same name gave two ids")
	}
	if a == b {
		t.Errorf("two names gave one id %s", a)
	}
	if !idPattern.MatchString(a) || !strings.HasPrefix(a, "acct-") {
		t.Errorf("id %q; want acct- and 12 hex digits", a)
	}
}

func TestFaults(t *testing.T) {
	var f faults
	for _, v := range []string{"vpc:vpc-1:quota exceeded: 5 VPCs per region", "route::no gateway"} {
		if err := f.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	if got := f.String(); got != "vpc:vpc-1:quota exceeded: 5 VPCs per region,route::no gateway" {
		t.Errorf("String() = %q", got)
	}
	for _, c := range []struct {
		kind, name, want string
	}{
		{kindVPC, "demo-vpc-1", "quota exceeded: 5 VPCs per region"},
		{kindVPC, "demo-vpc-2", ""},
		{kindAccount, "demo-vpc-1", ""},
		{kindRoute, "demo-route-0", "no gateway"},
	} {
		err := f.check(&converge.Task{Kind: c.kind, Name: c.name})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v; want no fault", c.kind, c.name, err)
		case c.want != "" && (err == nil || err.Error() != c.want || !converge.IsTerminal(err)):
			t.Errorf("%s %s: %v; want terminal %q", c.kind, c.name, err, c.want)
		}
	}
	for _, c := range []struct{ v, want string }{
		{"vpc", "want KIND:NAME-SUBSTRING:MESSAGE"},
		{"vpc:x", "want KIND:NAME-SUBSTRING:MESSAGE"},
		{"subnet:x:y", `kind "subnet": this worker serves`},
		{"vpc:x:", "MESSAGE must not be empty"},
	} {
		if err := new(faults).Set(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%q) = %v; want an error containing %q", c.v, err, c.want)
		}
	}
}

func TestFaultNamesTheCulpritThroughTheHandlers(t *testing.T) {
	h := &handlers{}
	if err := h.faults.Set("vpc:vpc-1:quota exceeded"); err != nil {
		t.Fatal(err)
	}
	_, err := h.leaf(reconcileVPC)(context.Background(), &converge.Task{Kind: kindVPC, Name: "demo-vpc-1",
		Spec: json.RawMessage(`{"cidr":"10.0.0.0/16","account_id":"acct-0123456789ab"}`)})
	if err == nil || err.Error() != "quota exceeded" || !converge.IsTerminal(err) {
		t.Fatalf("vpc demo-vpc-1 = %v; want terminal quota exceeded", err)
	}
	if err := h.faults.Set("landingzone:demo:composer down"); err != nil {
		t.Fatal(err)
	}
	_, err = h.compose(context.Background(), &converge.Task{Kind: kindZone, Name: "demo", Spec: json.RawMessage(`{"prefix":"demo","accounts":1}`)})
	if err == nil || err.Error() != "composer down" {
		t.Fatalf("compose = %v; want the injected fault", err)
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := &handlers{delay: time.Hour}
	_, err := h.leaf(reconcileAccount)(ctx, &converge.Task{Kind: kindAccount, Spec: json.RawMessage(`{}`)})
	if err != context.Canceled {
		t.Fatalf("error = %v; want context.Canceled", err)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-fail", "vpc"}, "want KIND:NAME-SUBSTRING:MESSAGE"},
		{[]string{"-delay", "-1s"}, "-delay -1s: must not be negative"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-capacity", "0"}, "WithCapacity(0)"},
		{[]string{"-server", "ftp://x"}, "scheme must be http or https"},
	} {
		err := run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v; want an error containing %q", c.args, err, c.want)
		}
	}
}
