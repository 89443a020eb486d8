package api_test

import (
	"context"
	"regexp"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

func opInput(t *testing.T, v map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInvokeOperationValidation(t *testing.T) {
	h := newOpHarness(t)
	ctx := context.Background()
	h.applyDB(t, "a")
	invoke := func(verb string, input map[string]any) error {
		req := &convergev1.InvokeOperationRequest{Kind: "db", Name: "a", Verb: verb}
		if input != nil {
			req.Input = opInput(t, input)
		}
		_, err := h.ctl.InvokeOperation(ctx, req)
		return err
	}
	wantRefused(t, "unknown verb", invoke("explode", map[string]any{}), connect.CodeInvalidArgument,
		`verb: "explode" is not an operation of kind db v1`, "declared verbs: resize, ping")
	wantRefused(t, "invalid input", invoke("resize", map[string]any{"size": 0, "tier": "bronze"}), connect.CodeInvalidArgument,
		`input_schema of verb "resize"`, "input/size: ", "input/tier: ")
	wantRefused(t, "extra field", invoke("resize", map[string]any{"size": 2, "colour": "red"}), connect.CodeInvalidArgument,
		"input/colour: property is not allowed")
	// No input is {}: resize requires size.
	wantRefused(t, "missing input", invoke("resize", nil), connect.CodeInvalidArgument, "input: ", "size")
	wantRefused(t, "unknown resource", func() error {
		_, err := h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "nope", Verb: "ping"})
		return err
	}(), connect.CodeNotFound, "default/db/nope")
	list, err := h.ctl.ListOperations(ctx, &convergev1.ListOperationsRequest{Kind: "db", Name: "a"})
	if err != nil || len(list.GetOperations()) != 0 {
		t.Fatalf("operations after refusals = %v, %v", list, err)
	}
	if e := h.lastEvent(t, "a"); e.GetReason() == "OperationRequested" {
		t.Fatalf("a refused operation was recorded: %v", e)
	}
}

var opID = regexp.MustCompile(`^[0-9a-z]{26}$`)

func TestInvokeOperationOverTheAPI(t *testing.T) {
	h := newOpHarness(t)
	ctx := context.Background()
	h.applyDB(t, "a")
	h.settle(t, store.Outcome{Status: []byte(`{}`)})

	woke := h.wake(t)
	res, err := h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "a",
		Verb: "resize", Input: opInput(t, map[string]any{"size": 3, "tier": "gold"}), Reason: "black friday"})
	if err != nil {
		t.Fatal(err)
	}
	woke()
	op := res.GetOperation()
	if !opID.MatchString(op.GetId()) || op.GetState() != "pending" || op.GetVerb() != "resize" ||
		op.GetResource().GetName() != "a" || op.GetResource().GetNamespace() != "default" ||
		op.GetInput().GetFields()["size"].GetNumberValue() != 3 || op.GetReason() != "black friday" ||
		op.GetRequestedAt() == nil || op.GetFinishedAt() != nil {
		t.Fatalf("operation = %v", op)
	}
	wantRecorded(t, h.lastEvent(t, "a"), "OperationRequested", "operation resize requested (id "+op.GetId()+")", "black friday")
	if op.GetActor() != h.lastEvent(t, "a").GetActor() {
		t.Fatalf("operation actor %q, event actor %q", op.GetActor(), h.lastEvent(t, "a").GetActor())
	}

	// ping has no input schema and no input: its input is {}.
	ping, err := h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "a", Verb: "ping"})
	if err != nil || ping.GetOperation().GetInput() == nil || len(ping.GetOperation().GetInput().GetFields()) != 0 {
		t.Fatalf("ping = %v, %v", ping, err)
	}
	got, err := h.ctl.GetOperation(ctx, &convergev1.GetOperationRequest{Id: op.GetId()})
	if err != nil || got.GetOperation().GetId() != op.GetId() || got.GetOperation().GetInput().GetFields()["tier"].GetStringValue() != "gold" {
		t.Fatalf("get = %v, %v", got, err)
	}
	_, err = h.ctl.GetOperation(ctx, &convergev1.GetOperationRequest{Id: "nope"})
	wantRefused(t, "get unknown", err, connect.CodeNotFound, `operation "nope" not found`)
	list, err := h.ctl.ListOperations(ctx, &convergev1.ListOperationsRequest{Kind: "db", Name: "a"})
	if err != nil || len(list.GetOperations()) != 2 || list.GetOperations()[0].GetVerb() != "ping" ||
		list.GetOperations()[1].GetId() != op.GetId() {
		t.Fatalf("list = %v, %v", list, err)
	}
	_, err = h.ctl.ListOperations(ctx, &convergev1.ListOperationsRequest{Kind: "db", Name: "nope"})
	wantRefused(t, "list unknown", err, connect.CodeNotFound, "default/db/nope")

	// Quarantine cancels both queued operations and refuses new ones.
	if _, err := h.ctl.QuarantineResource(ctx, &convergev1.QuarantineResourceRequest{Kind: "db", Name: "a", Reason: "hold"}); err != nil {
		t.Fatal(err)
	}
	list, err = h.ctl.ListOperations(ctx, &convergev1.ListOperationsRequest{Kind: "db", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.GetOperations() {
		if o.GetState() != "failed" || o.GetMessage() != store.QuarantineMessage || o.GetFinishedAt() == nil {
			t.Fatalf("operation after quarantine = %v", o)
		}
	}
	_, err = h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "a", Verb: "ping"})
	wantRefused(t, "quarantined", err, connect.CodeFailedPrecondition, "default/db/a is quarantined")

	h.applyDB(t, "b")
	if _, err := h.ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "db", Name: "b"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "b", Verb: "ping"})
	wantRefused(t, "deleting", err, connect.CodeFailedPrecondition, "default/db/b is being deleted")
}

// A kind edited behind this replica's back is caught at commit: the
// operation is validated again against the kind as it now stands.
func TestInvokeOperationRevalidatesAStaleKind(t *testing.T) {
	h := newOpHarness(t)
	ctx := context.Background()
	h.applyDB(t, "a")
	// Drop the ping verb and its reaction, as another replica's apply would.
	if _, err := h.store.Pool().Exec(ctx, `UPDATE kinds SET revision = revision + 1, updated_at = now(),
		manifest = jsonb_set(jsonb_set(manifest, '{operations}', (manifest->'operations') - 1),
		                     '{reactions}', (manifest->'reactions') - 3)
		WHERE kind = 'db' AND manifest->'reactions'->3->>'verb' = 'ping'`); err != nil {
		t.Fatal(err)
	}
	_, err := h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "a", Verb: "ping"})
	wantRefused(t, "verb removed meanwhile", err, connect.CodeInvalidArgument, `verb: "ping" is not an operation of kind db v1`,
		"declared verbs: resize")
	res, err := h.ctl.InvokeOperation(ctx, &convergev1.InvokeOperationRequest{Kind: "db", Name: "a", Verb: "resize",
		Input: opInput(t, map[string]any{"size": 1})})
	if err != nil || res.GetOperation().GetState() != "pending" {
		t.Fatalf("resize after the edit = %v, %v", res, err)
	}
}
