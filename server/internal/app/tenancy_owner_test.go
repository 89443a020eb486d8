package app_test

import (
	"context"
	"slices"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestTenantOwnerTeamAndReadsByID: a kind's owner team writes and reads
// that kind's resources in every namespace, grants or not; an operation
// fetched by id is decided by its resource's namespace.
func TestTenantOwnerTeamAndReadsByID(t *testing.T) {
	_, client := tenantServer(t)
	ctx := context.Background()
	admin, alice, audit := client("tok-admin"), client("tok-alice"), client("tok-audit")
	if _, err := alice.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: "web.app", KindVersion: 1, Owner: "team-a", SpecSchema: mustStruct(t, map[string]any{"type": "object"}),
		Reactions: []*convergev1.Reaction{{Name: "run", Trigger: "specChange", Emits: []string{"status"}}},
	}}); err != nil {
		t.Fatalf("team-a registers its kind: %v", err)
	}
	me, err := alice.WhoAmI(ctx, &convergev1.WhoAmIRequest{})
	if err != nil || !slices.Equal(me.GetGrants(), []string{"writer:team-a-*"}) || !slices.Equal(me.GetTeams(), []string{"team-a"}) {
		t.Errorf("alice's WhoAmI: %v, %v; want grants [writer:team-a-*], teams [team-a]", me, err)
	}
	applyCloudKind(t, admin)
	shop := &convergev1.ApplyResourceRequest{Namespace: "team-b", Kind: "web.app", KindVersion: 1, Name: "shop"}
	if _, err := alice.ApplyResource(ctx, shop); err != nil {
		t.Fatalf("the owner team writes its kind in team-b: %v", err)
	}
	if _, err := admin.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Namespace: "team-b", Kind: "cloud", KindVersion: 1, Name: "c1"}); err != nil {
		t.Fatal(err)
	}
	if got := listAll(t, alice, 1); !slices.Equal(got, []string{"team-b/shop"}) {
		t.Errorf("alice lists %v, want only her kind's team-b/shop", got)
	}
	if _, err := alice.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "team-b", Kind: "web.app", Name: "shop"}); err != nil {
		t.Errorf("the owner team reads its kind in team-b: %v", err)
	}
	_, err = alice.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: "team-b", Kind: "cloud", Name: "c1"})
	wantDenied(t, err, aliceIdent, "GetResource on kind cloud in namespace team-b")

	op, err := admin.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Namespace: "team-b", Kind: "cloud", Name: "c1", Verb: "restart"})
	if err != nil {
		t.Fatal(err)
	}
	id := op.GetOperation().GetId()
	_, err = alice.GetOperation(ctx, &convergev1.GetOperationRequest{Id: id})
	wantDenied(t, err, aliceIdent, "GetOperation on kind cloud in namespace team-b")
	_, err = alice.ListOperations(ctx, &convergev1.ListOperationsRequest{Namespace: "team-b", Kind: "cloud", Name: "c1"})
	wantDenied(t, err, aliceIdent, "ListOperations on kind cloud in namespace team-b")
	_, err = alice.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Namespace: "team-b", Kind: "cloud", Name: "c1", Verb: "restart"})
	wantDenied(t, err, aliceIdent, "InvokeOperation on kind cloud in namespace team-b")
	if got, err := audit.GetOperation(ctx, &convergev1.GetOperationRequest{Id: id}); err != nil || got.GetOperation().GetId() != id {
		t.Errorf("a reader of team-b gets the operation: %v, %v", got, err)
	}
}
