package api_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// opHarness is the control service over HTTP on a fresh database, with
// the store and bus underneath for arranging state and observing wakes.
type opHarness struct {
	ctl   convergev1connect.ControlServiceClient
	store *store.Store
	bus   *notify.Bus
}

func newOpHarness(t *testing.T) *opHarness {
	t.Helper()
	ctl, st, bus := serveAPI(t, pgtest.New(t).Pool)
	h := &opHarness{ctl: ctl, store: st, bus: bus}
	h.applyDBKind(t)
	return h
}

// dbKind declares two verbs: resize (with an input schema) and ping
// (without), and a teardown so that deletions stay visible.
const dbKind = `{
  "kind": "db", "kind_version": 1,
  "spec_schema": {"type": "object"},
  "finalizer": "db/cleanup",
  "reactions": [
    {"name": "reconcile", "trigger": "specChange", "emits": ["status"]},
    {"name": "teardown", "trigger": "deleteRequested", "emits": ["finalizer"]},
    {"name": "resize", "trigger": "operation", "verb": "resize", "emits": ["operationOutput"]},
    {"name": "ping", "trigger": "operation", "verb": "ping", "emits": ["operationOutput"]}
  ],
  "operations": [
    {"verb": "resize", "input_schema": {"type": "object", "required": ["size"], "additionalProperties": false,
      "properties": {"size": {"type": "integer", "minimum": 1}, "tier": {"enum": ["gold", "silver"]}}}},
    {"verb": "ping"}
  ]
}`

func (h *opHarness) applyDBKind(t *testing.T) {
	t.Helper()
	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal([]byte(dbKind), m); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
		t.Fatal(err)
	}
}

func (h *opHarness) applyDB(t *testing.T, name string) {
	t.Helper()
	if _, err := h.ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{
		Kind: "db", KindVersion: 1, Name: name}); err != nil {
		t.Fatal(err)
	}
}

// settle runs the queued specChange task of one db with the given outcome.
func (h *opHarness) settle(t *testing.T, out store.Outcome) {
	t.Helper()
	ctx := context.Background()
	got, err := h.store.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "db", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim = %+v, %v", got, err)
	}
	out.Lease = got[0].Lease
	res, err := h.store.ApplyOutcomes(ctx, []store.Outcome{out}, store.Backoff{Base: time.Hour, Max: time.Hour})
	if err != nil || !res[0].Applied {
		t.Fatalf("outcome = %+v, %v", res, err)
	}
}

// lastEvent returns the newest event of a db.
func (h *opHarness) lastEvent(t *testing.T, name string) *convergev1.Event {
	t.Helper()
	res, err := h.ctl.ListEvents(context.Background(), &convergev1.ListEventsRequest{Kind: "db", Name: name, PageSize: 1})
	if err != nil || len(res.GetEvents()) == 0 {
		t.Fatalf("events of %s: %v", name, err)
	}
	return res.GetEvents()[0]
}

// wantRecorded checks an event's reason, that an API caller is its actor,
// and that its message carries each part.
func wantRecorded(t *testing.T, e *convergev1.Event, reason string, parts ...string) {
	t.Helper()
	if e.GetReason() != reason || !strings.HasPrefix(e.GetActor(), "api:127.0.0.1:") {
		t.Fatalf("event %s by %q (%q), want %s by the API caller", e.GetReason(), e.GetActor(), e.GetMessage(), reason)
	}
	for _, p := range parts {
		if !strings.Contains(e.GetMessage(), p) {
			t.Fatalf("%s message %q does not mention %q", reason, e.GetMessage(), p)
		}
	}
}

// wantRefused checks an error's code and that its message names what it must.
func wantRefused(t *testing.T, what string, err error, code connect.Code, parts ...string) {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Fatalf("%s: err = %v, want %v", what, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(ce.Message(), p) {
			t.Fatalf("%s: %q does not mention %q", what, ce.Message(), p)
		}
	}
}

// wake subscribes to the task channel; the returned func fails the test
// unless a wake arrived.
func (h *opHarness) wake(t *testing.T) func() {
	t.Helper()
	ch, stop := h.bus.Subscribe(notify.Tasks)
	return func() {
		t.Helper()
		defer stop()
		testkit.ReceiveWithin(t, 5*time.Second, ch, "a wake on the task channel")
	}
}

func TestQuarantineOverTheAPI(t *testing.T) {
	h := newOpHarness(t)
	ctx := context.Background()
	h.applyDB(t, "a")
	_, err := h.ctl.QuarantineResource(ctx, &convergev1.QuarantineResourceRequest{Kind: "db", Name: "a"})
	wantRefused(t, "no reason", err, connect.CodeInvalidArgument, "reason")
	_, err = h.ctl.QuarantineResource(ctx, &convergev1.QuarantineResourceRequest{Kind: "db", Name: "nope", Reason: "x"})
	wantRefused(t, "missing", err, connect.CodeNotFound, "default/db/nope")

	q := &convergev1.QuarantineResourceRequest{Kind: "db", Name: "a", Reason: "crash loop"}
	res, err := h.ctl.QuarantineResource(ctx, q)
	if err != nil || res.GetResource().GetPhase() != "Quarantined" {
		t.Fatalf("quarantine = %v, %v", res, err)
	}
	wantRecorded(t, h.lastEvent(t, "a"), "Quarantined", "crash loop", "dropped 1 queued task(s): specChange")
	before := h.lastEvent(t, "a").GetTime().AsTime()
	if res, err := h.ctl.QuarantineResource(ctx, q); err != nil || res.GetResource().GetPhase() != "Quarantined" {
		t.Fatalf("quarantine again = %v, %v", res, err)
	}
	if e := h.lastEvent(t, "a"); e.GetReason() != "Quarantined" || !e.GetTime().AsTime().Equal(before) {
		t.Fatalf("quarantine again recorded %s at %v", e.GetReason(), e.GetTime().AsTime())
	}

	_, err = h.ctl.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{Kind: "db", Name: "a"})
	wantRefused(t, "reconcile quarantined", err, connect.CodeFailedPrecondition, "default/db/a is quarantined: unquarantine it first")

	woke := h.wake(t)
	un, err := h.ctl.UnquarantineResource(ctx, &convergev1.UnquarantineResourceRequest{Kind: "db", Name: "a", Reason: "patched"})
	if err != nil || un.GetResource().GetPhase() != "Reconciling" {
		t.Fatalf("unquarantine = %v, %v", un, err)
	}
	woke()
	wantRecorded(t, h.lastEvent(t, "a"), "Unquarantined", "patched", "generation 1 queued for reconcile")
	_, err = h.ctl.UnquarantineResource(ctx, &convergev1.UnquarantineResourceRequest{Kind: "db", Name: "a"})
	wantRefused(t, "unquarantine twice", err, connect.CodeFailedPrecondition, "default/db/a is not quarantined")

	// A resource being deleted can be quarantined, to stop a teardown that
	// keeps failing from blocking its ancestors.
	if _, err := h.ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "db", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err = h.ctl.QuarantineResource(ctx, q); err != nil {
		t.Fatalf("quarantining a deleting resource: %v", err)
	}
	wantRecorded(t, h.lastEvent(t, "a"), "Quarantined", "its teardown stops")
}

func TestForcedReconcileOverTheAPI(t *testing.T) {
	h := newOpHarness(t)
	ctx := context.Background()
	_, err := h.ctl.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{Kind: "db", Name: "nope"})
	wantRefused(t, "missing", err, connect.CodeNotFound, "default/db/nope")

	// A synced resource reconciles again at its generation.
	h.applyDB(t, "synced")
	h.settle(t, store.Outcome{Status: []byte(`{}`)})
	woke := h.wake(t)
	res, err := h.ctl.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{Kind: "db", Name: "synced", Reason: "drift"})
	if err != nil {
		t.Fatal(err)
	}
	woke()
	if r := res.GetResource(); r.GetPhase() != "Ready" || r.GetGeneration() != 1 {
		t.Fatalf("after forced reconcile of a synced resource: %s gen %d", r.GetPhase(), r.GetGeneration())
	}
	wantRecorded(t, h.lastEvent(t, "synced"), "ReconcileRequested", "reconcile forced at generation 1", "drift")
	h.settle(t, store.Outcome{Status: []byte(`{"again":true}`)})
	got, err := h.ctl.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "db", Name: "synced"})
	if err != nil || got.GetResource().GetReconciles() != 2 {
		t.Fatalf("reconciles = %d, %v; want 2", got.GetResource().GetReconciles(), err)
	}

	// A terminal failure is cleared.
	h.applyDB(t, "broken")
	h.settle(t, store.Outcome{Failed: true, Terminal: true, Message: "quota exceeded"})
	res, err = h.ctl.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{Kind: "db", Name: "broken", Reason: "quota raised"})
	if err != nil {
		t.Fatal(err)
	}
	if r := res.GetResource(); r.GetPhase() != "Reconciling" || r.GetFailure() != nil {
		t.Fatalf("after forced reconcile of a failed resource: %s failure %v", r.GetPhase(), r.GetFailure())
	}
	wantRecorded(t, h.lastEvent(t, "broken"), "ReconcileRequested", "quota raised", "cleared the terminal failure: quota exceeded")

	// The gate holds a resource until its dependencies are ready.
	h.applyDB(t, "held")
	if _, err := h.store.Pool().Exec(ctx, `UPDATE resources SET waiting = 'waits for db/upstream (Reconciling)' WHERE name = 'held'`); err != nil {
		t.Fatal(err)
	}
	_, err = h.ctl.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{Kind: "db", Name: "held"})
	wantRefused(t, "gated", err, connect.CodeFailedPrecondition, "waits for db/upstream (Reconciling)")

	if _, err := h.ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "db", Name: "broken"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.ctl.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{Kind: "db", Name: "broken"})
	wantRefused(t, "deleting", err, connect.CodeFailedPrecondition, "default/db/broken is being deleted")
}
