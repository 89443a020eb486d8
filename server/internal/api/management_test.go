package api_test

import (
	"context"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestManagementPolicyOverTheAPI: a resource of a kind with an observe
// reaction may be observed and import an object, both shown on it; moving
// it to full is one recorded change; a kind without an observe reaction
// refuses observation at the apply and at SetManagementPolicy, naming M26.
func TestManagementPolicyOverTheAPI(t *testing.T) {
	h := newOpHarness(t)
	ctx := context.Background()
	h.applyDB(t, "a")
	_, err := h.ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "db", KindVersion: 1, Name: "b", ManagementPolicy: "observe"})
	wantRefused(t, "observing a db", err, connect.CodeInvalidArgument, "default/db/b: management_policy", "no observe reaction", "M26")
	_, err = h.ctl.SetManagementPolicy(ctx, &convergev1.SetManagementPolicyRequest{Kind: "db", Name: "a", ManagementPolicy: "observe"})
	wantRefused(t, "SetManagementPolicy observe of a db", err, connect.CodeFailedPrecondition, "management_policy", "M26")

	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal([]byte(`{"kind": "vpc", "kind_version": 1, "reactions": [
	  {"name": "reconcile", "trigger": "specChange", "emits": ["status"]},
	  {"name": "look", "trigger": "observe", "emits": ["status"]}]}`), m); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
		t.Fatal(err)
	}
	res, err := h.ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "vpc", KindVersion: 1, Name: "main",
		ManagementPolicy: "observe", Import: &convergev1.ResourceImport{Id: "vpc-0abc"}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.GetResource()
	if r.GetManagementPolicy() != "observe" || r.GetEffectiveManagementPolicy() != "observe" || r.GetImport().GetId() != "vpc-0abc" {
		t.Fatalf("applied: policy %q effective %q import %v", r.GetManagementPolicy(), r.GetEffectiveManagementPolicy(), r.GetImport())
	}
	set, err := h.ctl.SetManagementPolicy(ctx, &convergev1.SetManagementPolicyRequest{Kind: "vpc", Name: "main", ManagementPolicy: "", Reason: "follow the kind"})
	if err != nil || !set.GetChanged() || set.GetResource().GetEffectiveManagementPolicy() != "full" || set.GetResource().GetManagementPolicy() != "" {
		t.Fatalf("back to the kind's: %v, %v", set, err)
	}
	ev, err := h.ctl.ListEvents(ctx, &convergev1.ListEventsRequest{Kind: "vpc", Name: "main", PageSize: 1})
	if err != nil || len(ev.GetEvents()) == 0 {
		t.Fatalf("events of vpc/main: %v", err)
	}
	wantRecorded(t, ev.GetEvents()[0], "ManagementPolicyChanged", "management policy observe -> full (the kind's): follow the kind")
}
