package api_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// siteV1 has a finalizer, so a deleted site stays visible while it is
// torn down; siteV2 is a new version with a different spec.
const siteV1 = `{
  "kind": "site", "kind_version": 1,
  "spec_schema": {"type": "object", "properties": {"name": {"type": "string"}}},
  "finalizer": "site/cleanup",
  "reactions": [
    {"name": "reconcile", "trigger": "specChange", "emits": ["status"]},
    {"name": "teardown", "trigger": "deleteRequested", "emits": ["finalizer"]}
  ]
}`

const siteV2 = `{
  "kind": "site", "kind_version": 2,
  "spec_schema": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}},
  "reactions": [{"name": "reconcile", "trigger": "specChange", "emits": ["status"]}]
}`

func (h *lcHarness) site(t *testing.T, name string, version int32, spec string) *convergev1.Resource {
	t.Helper()
	res, err := h.ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "site", KindVersion: version,
		Name: name, Spec: lcStruct(t, spec)})
	if err != nil {
		t.Fatalf("apply site %s v%d %s: %v", name, version, spec, err)
	}
	return res.GetResource()
}

func (h *lcHarness) rollback(name string, gen int64) (*convergev1.Resource, error) {
	res, err := h.ctl.RollbackResource(context.Background(), &convergev1.RollbackResourceRequest{Kind: "site", Name: name,
		Generation: gen, Reason: "bad deploy"})
	return res.GetResource(), err
}

// history lists every kept revision of a site as "generation:vN:source:spec".
func (h *lcHarness) history(t *testing.T, name string) string {
	t.Helper()
	res, err := h.ctl.GetResourceHistory(context.Background(), &convergev1.GetResourceHistoryRequest{Kind: "site", Name: name, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range res.GetRevisions() {
		out = append(out, fmt.Sprintf("%d:v%d:%s:%s", r.GetGeneration(), r.GetKindVersion(), r.GetSource(), lcJSON(t, r.GetSpec())))
	}
	return strings.Join(out, " ")
}

func TestResourceHistoryAPI(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, siteV1)
	for i := 1; i <= 5; i++ {
		h.site(t, "a", 1, fmt.Sprintf(`{"name":"n%d"}`, i))
	}
	req := &convergev1.GetResourceHistoryRequest{Kind: "site", Name: "a", PageSize: 2}
	var gens []int64
	for pages := 1; ; pages++ {
		res, err := h.ctl.GetResourceHistory(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if res.GetKeep() != store.DefaultHistoryKeep {
			t.Fatalf("keep = %d", res.GetKeep())
		}
		for _, r := range res.GetRevisions() {
			if r.GetSource() != "apply" || !strings.HasPrefix(r.GetActor(), "api:127.0.0.1:") || r.GetTime() == nil ||
				lcJSON(t, r.GetSpec()) != fmt.Sprintf(`{"name":"n%d"}`, r.GetGeneration()) {
				t.Fatalf("revision = %v", r)
			}
			gens = append(gens, r.GetGeneration())
		}
		if res.GetNextPageToken() == "" {
			if pages != 3 {
				t.Fatalf("%d pages, want 3", pages)
			}
			break
		}
		req.PageToken = res.GetNextPageToken()
	}
	if fmt.Sprint(gens) != "[5 4 3 2 1]" {
		t.Fatalf("generations = %v", gens)
	}
	// The default page is 20.
	res, err := h.ctl.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Kind: "site", Name: "a"})
	if err != nil || len(res.GetRevisions()) != 5 || res.GetNextPageToken() != "" {
		t.Fatalf("default page = %v, %v", res, err)
	}

	_, err = h.ctl.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Kind: "site", Name: "nope"})
	lcRefused(t, "missing resource", err, connect.CodeNotFound, "resource default/site/nope not found")
	_, err = h.ctl.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Kind: "site", Name: "a", PageToken: "xyz"})
	lcRefused(t, "bad token", err, connect.CodeInvalidArgument, "page_token")
	_, err = h.ctl.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Kind: "site", Name: "a", PageSize: 101})
	lcRefused(t, "page too big", err, connect.CodeInvalidArgument, "page_size")
}

func TestRollbackAPI(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, siteV1)
	h.site(t, "a", 1, `{"name":"one"}`)
	h.site(t, "a", 1, `{"name":"two"}`)
	tasks, stop := h.bus.Subscribe(notify.Tasks)
	defer stop()

	r, err := h.rollback("a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.GetGeneration() != 3 || lcJSON(t, r.GetSpec()) != `{"name":"one"}` || r.GetPhase() != "Reconciling" {
		t.Fatalf("rolled back = %v", r)
	}
	if !woken(tasks) {
		t.Fatal("no tasks wake after a rollback")
	}
	if got := h.history(t, "a"); got != `3:v1:rollback:{"name":"one"} 2:v1:apply:{"name":"two"} 1:v1:apply:{"name":"one"}` {
		t.Fatalf("history = %s", got)
	}
	ev, err := h.ctl.ListEvents(ctx, &convergev1.ListEventsRequest{Kind: "site", Name: "a", PageSize: 1})
	if err != nil || len(ev.GetEvents()) != 1 {
		t.Fatalf("events: %v, %v", ev, err)
	}
	if e := ev.GetEvents()[0]; e.GetReason() != "RolledBack" || !strings.HasPrefix(e.GetActor(), "api:127.0.0.1:") ||
		!strings.Contains(e.GetMessage(), "generation 1") || !strings.Contains(e.GetMessage(), "bad deploy") {
		t.Fatalf("event = %v", e)
	}
	// The spec it already has: nothing changes.
	if r, err := h.rollback("a", 1); err != nil || r.GetGeneration() != 3 {
		t.Fatalf("rollback to the current spec = %v, %v", r, err)
	}
	if woken(tasks) {
		t.Fatal("a tasks wake after a rollback that changed nothing")
	}
	_, err = h.rollback("a", 9)
	lcRefused(t, "future generation", err, connect.CodeNotFound, "generation 9 of default/site/a: never existed; the current generation is 3")
	_, err = h.rollback("nope", 1)
	lcRefused(t, "missing resource", err, connect.CodeNotFound, "resource default/site/nope not found")

	// A resource being deleted.
	if _, err := h.ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "site", Name: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.rollback("a", 2)
	lcRefused(t, "deleting", err, connect.CodeFailedPrecondition, "default/site/a is being deleted")
}

func TestRollbackVersionMoveAPI(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, siteV1)
	h.kind(t, siteV2)
	h.site(t, "a", 1, `{"name":"one"}`)
	h.site(t, "a", 2, `{"title":"One"}`)
	h.site(t, "b", 1, `{"name":"b"}`)
	h.site(t, "b", 2, `{"title":"B"}`)

	r, err := h.rollback("a", 1)
	if err != nil || r.GetKindVersion() != 1 || r.GetGeneration() != 3 || lcJSON(t, r.GetSpec()) != `{"name":"one"}` {
		t.Fatalf("rollback to v1 = %v, %v", r, err)
	}
	if got := h.history(t, "a"); !strings.HasPrefix(got, `3:v1:rollback:{"name":"one"} 2:v2:apply:`) {
		t.Fatalf("history = %s", got)
	}

	// Retired: no resource moves to v1 any more.
	m := strings.Replace(siteV1, `"finalizer"`, `"policy": {"retired": true}, "finalizer"`, 1)
	h.kind(t, m)
	_, err = h.rollback("b", 1)
	lcRefused(t, "retired", err, connect.CodeFailedPrecondition, "generation 1 of default/site/b was at kind site v1, which is retired")

	// Gone: v1 deleted once nothing uses it.
	if _, err := h.rollback("a", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ctl.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "site", KindVersion: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = h.rollback("b", 1)
	lcRefused(t, "kind gone", err, connect.CodeFailedPrecondition, "was at kind site v1, which is no longer registered")
}

func TestRollbackOwnedChildAPI(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, `{"kind": "stack", "kind_version": 1, "spec_schema": {"type": "object"},
	  "reactions": [{"name": "compose", "trigger": "specChange", "emits": ["children", "status"]}]}`)
	h.kind(t, siteV1)
	if _, err := h.ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "s"}); err != nil {
		t.Fatal(err)
	}
	got, err := h.store.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "stack", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(got) != 1 {
		t.Fatalf("claim = %v, %v", got, err)
	}
	site, err := h.store.GetKind(ctx, "site", 1)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.store.ApplyComposition(ctx, store.Composition{
		Outcome: store.Outcome{Lease: got[0].Lease, Actor: "worker:w", Status: []byte(`{}`)},
		Children: []store.ChildSpec{{Kind: "site", Version: 1, Name: "s-web", Labels: []byte(`{}`),
			Spec: []byte(`{"name":"web"}`), KindRevision: site.Revision}},
	})
	if err != nil || !res.Applied {
		t.Fatalf("compose = %+v, %v", res, err)
	}
	if got := h.history(t, "s-web"); got != `1:v1:compose:{"name":"web"}` {
		t.Fatalf("child history = %s", got)
	}
	_, err = h.rollback("s-web", 1)
	lcRefused(t, "owned child", err, connect.CodeFailedPrecondition,
		"owned by composite stack/s: its spec comes from its composer; roll back the composite")
}

// TestHistoryKeepServer runs a whole server with --history-keep 3.
func TestHistoryKeepServer(t *testing.T) {
	db := pgtest.New(t)
	start := func(keep int) (*app.App, error) {
		return app.Start(context.Background(), app.Config{DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleControl,
			HistoryKeep: keep, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}
	if _, err := start(1001); err == nil || !strings.Contains(err.Error(), "--history-keep 1001: must be between 1 and 1000") {
		t.Fatalf("keep 1001: %v", err)
	}
	a, err := start(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	h := &lcHarness{ctl: convergev1connect.NewControlServiceClient(http.DefaultClient, "http://"+a.Addr().String())}
	h.kind(t, siteV1)
	for i := 1; i <= 6; i++ {
		h.site(t, "a", 1, fmt.Sprintf(`{"name":"n%d"}`, i))
	}
	res, err := h.ctl.GetResourceHistory(context.Background(), &convergev1.GetResourceHistoryRequest{Kind: "site", Name: "a"})
	if err != nil || res.GetKeep() != 3 {
		t.Fatalf("history = %v, %v", res, err)
	}
	if got := h.history(t, "a"); got != `6:v1:apply:{"name":"n6"} 5:v1:apply:{"name":"n5"} 4:v1:apply:{"name":"n4"}` {
		t.Fatalf("kept = %s", got)
	}
	_, err = h.rollback("a", 3)
	lcRefused(t, "aged out", err, connect.CodeNotFound,
		"generation 3 of default/site/a: aged out: the oldest kept generation is 4 (the last 3 are kept)")

	// The same over REST.
	base := "http://" + a.Addr().String() + "/api/v1"
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/namespaces/default/resources/site/a/history?page_size=1", "", `"keep":3`},
		{"POST", "/namespaces/default/resources/site/a/rollback", `{"generation":"5","reason":"r"}`, `"generation":"7"`},
		{"POST", "/providerconfigs", `{"kind":"site","kind_version":1,"name":"default","config":{"a":1}}`, `"result":"created"`},
		{"GET", "/providerconfigs/site/versions/1/default", "", `"revision":"1"`},
	} {
		req, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(strings.ReplaceAll(string(body), " ", ""), c.want) {
			t.Fatalf("%s %s: %d %s (%v), want %s", c.method, c.path, resp.StatusCode, body, err, c.want)
		}
	}
}
