package conctl

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// printPlans reads like terraform plan: one line per child that changes,
// with its spec diff and why it would wait, the edges, a composite that
// was not previewed with the reason, and the totals with the plan's id.
func TestPrintPlans(t *testing.T) {
	spec := func(m map[string]any) *structpb.Struct {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ref := func(kind, name string) *convergev1.ResourceRef {
		return &convergev1.ResourceRef{Namespace: "default", Kind: kind, Name: name}
	}
	res := &convergev1.PlanChangeResponse{PlanId: "plan-1", Composites: []*convergev1.CompositePlan{
		{Composite: ref("zone", "z"), Composer: "worker w1", Children: []*convergev1.PlannedChild{
			{Kind: "vpc", Name: "z-vpc-1", Action: "create", SpecAfter: spec(map[string]any{"cidr": "10.0.0.0/16"}),
				Waiting: "waiting for account/z-acct-1 to sync (it is not created yet)"},
			{Kind: "vpc", Name: "z-vpc-0", Action: "update", SpecBefore: spec(map[string]any{"cidr": "a"}), SpecAfter: spec(map[string]any{"cidr": "b"})},
			{Kind: "account", Name: "z-acct-0", Action: "unchanged"},
			{Kind: "route", Name: "z-route-9", Action: "orphan"},
		}, EdgesAdded: []*convergev1.PlannedEdge{{Dependent: ref("vpc", "z-vpc-1"), Dependency: ref("account", "z-acct-1")}}},
		{Composite: ref("zone", "y"), Reaction: "compose", NotPreviewed: "no connected worker serves kind zone v1 reaction compose"},
	}, Totals: &convergev1.PlanTotals{Create: 1, Update: 1, Unchanged: 1, Orphan: 1, Composites: 2, NotPreviewed: 1}}
	var b bytes.Buffer
	printPlans(&b, res)
	for _, want := range []string{
		"composite default/zone/z (worker w1):\n  + create vpc/z-vpc-1\n",
		`      +  "cidr": "10.0.0.0/16"`,
		"      waiting for account/z-acct-1 to sync (it is not created yet)\n",
		"  ~ update vpc/z-vpc-0\n",
		`      -  "cidr": "a"`,
		"  - orphan route/z-route-9\n  + edge vpc/z-vpc-1 -> account/z-acct-1\n",
		"composite default/zone/y (reaction compose):\n  children not previewed: no connected worker serves kind zone v1 reaction compose\n",
		"Plan: 1 child(ren) to create, 1 to update, 0 to prune, 1 to orphan, 1 unchanged, across 2 composite(s); 1 composite(s) not previewed; nothing was changed.\n",
		"To apply exactly this plan: conctl apply --plan-id plan-1 -f ...\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "z-acct-0") {
		t.Errorf("an unchanged child is printed:\n%s", b.String())
	}
}
