package conctl_test

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// A landing zone: the composite landingzone/acme owns three accounts; each
// account owns its VPCs and routes. vpc/prod-main failed terminally and
// route/dev-default waits for its VPC, so both are culprits of the root.

func ref(kind, name string) *convergev1.ResourceRef {
	return &convergev1.ResourceRef{Namespace: "default", Kind: kind, Name: name}
}

func rollup(total, ready, reconciling, failed int32, culprits ...*convergev1.Culprit) *convergev1.Rollup {
	return &convergev1.Rollup{Total: total, Ready: ready, Reconciling: reconciling, Failed: failed, Culprits: culprits}
}

func node(r *convergev1.ResourceRef, phase, msg string, onPath bool, children ...*convergev1.TreeNode) *convergev1.TreeNode {
	return &convergev1.TreeNode{Resource: r, KindVersion: 1, Phase: phase, Message: msg, OnCulpritPath: onPath, Children: children}
}

func composite(n *convergev1.TreeNode, r *convergev1.Rollup) *convergev1.TreeNode {
	n.Rollup = r
	return n
}

const (
	cidrMessage    = "CIDR 10.0.0.0/16 overlaps vpc/prod-legacy"
	waitingMessage = "dependency vpc/dev-main is not synced"
)

func acmeCulprits() []*convergev1.Culprit {
	return []*convergev1.Culprit{
		{Resource: ref("vpc", "prod-main"), Phase: "Failed", Message: cidrMessage, Path: []*convergev1.ResourceRef{ref("account", "prod")}},
		{Resource: ref("route", "dev-default"), Phase: "Reconciling", Message: waitingMessage, Path: []*convergev1.ResourceRef{ref("account", "dev")}},
	}
}

// acmeTree is four levels deep, so a tree cut at three levels counts the
// last one. As the server does, it marks the culprits and the composites
// between them and the root, not the root itself.
func acmeTree() *convergev1.TreeNode {
	return composite(node(ref("landingzone", "acme"), "Failed", "", false,
		composite(node(ref("account", "prod"), "Failed", "", true,
			node(ref("vpc", "prod-main"), "Failed", cidrMessage, true),
			node(ref("vpc", "prod-legacy"), "Ready", "", false),
		), rollup(2, 1, 0, 1)),
		composite(node(ref("account", "dev"), "Reconciling", "", true,
			node(ref("route", "dev-default"), "Reconciling", waitingMessage, true),
			node(ref("vpc", "dev-main"), "Reconciling", "", false),
		), rollup(2, 0, 2, 0)),
		composite(node(ref("account", "sandbox"), "Ready", "", false,
			composite(node(ref("vpc", "sandbox-main"), "Ready", "", false,
				composite(node(ref("subnet", "sandbox-a"), "Ready", "", false,
					node(ref("route", "sandbox-a-default"), "Ready", "", false),
				), rollup(1, 1, 0, 0)),
			), rollup(1, 1, 0, 0)),
		), rollup(1, 1, 0, 0)),
	), rollup(3, 1, 1, 1, acmeCulprits()...))
}

func acmeResource() *convergev1.Resource {
	return &convergev1.Resource{
		Namespace: "default", Kind: "landingzone", KindVersion: 1, Name: "acme", Uid: "uid-acme",
		Phase: "Failed", Generation: 2, SyncedGeneration: 2, Healthy: true, Reconciles: 5,
		Rollup: rollup(3, 1, 1, 1, acmeCulprits()...),
		Conditions: []*convergev1.Condition{{
			Type: "Ready", Status: "False", Reason: "ChildFailed", Message: "vpc/prod-main: " + cidrMessage,
			LastTransitionTime: timestamppb.New(testNow.Add(-2 * time.Minute)),
		}},
		CreatedAt: timestamppb.New(testNow.Add(-time.Hour)),
		UpdatedAt: timestamppb.New(testNow.Add(-2 * time.Minute)),
	}
}

// routeResource is a child two levels down that waits for a sibling.
func routeResource() *convergev1.Resource {
	return &convergev1.Resource{
		Namespace: "default", Kind: "route", KindVersion: 1, Name: "dev-default", Uid: "uid-route",
		Phase: "Reconciling", Generation: 1, Reconciles: 0,
		Owner: ref("account", "dev"), Root: ref("landingzone", "acme"),
		Waiting: waitingMessage, DeletionPolicy: "retain",
		CreatedAt: timestamppb.New(testNow.Add(-time.Hour)),
		UpdatedAt: timestamppb.New(testNow.Add(-time.Hour)),
	}
}

// acmeGraph is one level of the landing zone drawn flat: an account, a VPC
// that takes the account's id and a shared IPAM pool from another
// namespace, and a route that waits for the VPC's id. vpc/prod failed; a
// culprit deeper down is reached through account/dev.
func acmeGraph() *convergev1.GetResourceGraphResponse {
	ipam := &convergev1.ResourceRef{Namespace: "network", Kind: "ipam", Name: "shared"}
	return &convergev1.GetResourceGraphResponse{
		Nodes: []*convergev1.GraphNode{
			{Resource: ref("landingzone", "acme"), KindVersion: 1, Phase: "Failed"},
			{Resource: ref("account", "prod"), KindVersion: 1, Phase: "Ready"},
			{Resource: ref("vpc", "prod"), KindVersion: 1, Phase: "Failed", Message: `CIDR "10.0.0.0/16" overlaps a reservation`},
			{Resource: ref("route", "prod-default"), KindVersion: 1, Phase: "Reconciling", Message: "dependency vpc/prod is not synced"},
			{Resource: ref("account", "dev"), KindVersion: 1, Phase: "Reconciling"},
			{Resource: ipam, KindVersion: 2, Phase: "Ready", External: true},
		},
		Edges: []*convergev1.GraphEdge{
			{Dependent: ref("vpc", "prod"), Dependency: ref("account", "prod"), Satisfied: true,
				Flows: []*convergev1.GraphFlow{{From: "/account_id", To: "/account_id"}}},
			{Dependent: ref("vpc", "prod"), Dependency: ipam, Satisfied: true,
				Flows: []*convergev1.GraphFlow{{From: "/pools/main", To: "/ipam_pool"}}},
			{Dependent: ref("route", "prod-default"), Dependency: ref("vpc", "prod"),
				Flows: []*convergev1.GraphFlow{{From: "/vpc_id", To: "/vpc_id"}, {Expr: `"rt-" + status.vpc_id`, To: "/table_name"}}},
		},
		Culprits: []*convergev1.Culprit{
			{Resource: ref("vpc", "prod"), Phase: "Failed", Message: `CIDR "10.0.0.0/16" overlaps a reservation`},
			{Resource: ref("vpc", "dev-main"), Phase: "Reconciling", Message: "creating", Path: []*convergev1.ResourceRef{ref("account", "dev")}},
		},
	}
}
