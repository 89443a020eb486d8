package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func code(err error) connect.Code {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Code()
	}
	return connect.CodeUnknown
}

func TestBatchApplyIsAllOrNothing(t *testing.T) {
	_, ctl, _ := server(t)
	applyGreeting(t, ctl)
	ctx := context.Background()
	req := &convergev1.ApplyResourcesRequest{}
	for i := 0; i < 5; i++ {
		name := map[string]any{"name": fmt.Sprint("n", i)}
		if i == 3 {
			name = map[string]any{"name": ""} // violates minLength
		}
		req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{
			Kind: "greeting", KindVersion: 1, Name: fmt.Sprint("r", i), Spec: mustStruct(t, name)})
	}
	_, err := ctl.ApplyResources(ctx, req)
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "resources[3]") || !strings.Contains(err.Error(), "/name") {
		t.Fatalf("err = %v", err)
	}
	list, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: "greeting"})
	if err != nil || len(list.GetResources()) != 0 {
		t.Fatalf("after a refused batch: %d resources, %v", len(list.GetResources()), err)
	}
	// Duplicate names in one batch are refused too.
	req.Resources[3] = req.Resources[1]
	if _, err := ctl.ApplyResources(ctx, req); code(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "resources[1] and resources[3]") {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestApplyRefusals(t *testing.T) {
	_, ctl, _ := server(t)
	applyGreeting(t, ctl)
	ctx := context.Background()
	_, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "nope", KindVersion: 1, Name: "a"})
	if code(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "kind nope v1 is not registered") {
		t.Fatalf("unknown kind: %v", err)
	}
	_, err = ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 2, Name: "a"})
	if code(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "greeting v2") {
		t.Fatalf("unknown version: %v", err)
	}
	big := strings.Repeat("x", 600<<10)
	_, err = ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: "a",
		Spec: mustStruct(t, map[string]any{"name": big})})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "the limit is 524288") {
		t.Fatalf("oversized spec: %v", err)
	}
	_, err = ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1, Name: "Bad Name"})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "name:") {
		t.Fatalf("bad name: %v", err)
	}
}

func TestKindLifecycle(t *testing.T) {
	_, ctl, _ := server(t)
	ctx := context.Background()
	applyGreeting(t, ctl)
	again, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: mustGetKind(t, ctl)})
	if err != nil || again.GetResult() != "unchanged" {
		t.Fatalf("re-apply = %v, %v", again.GetResult(), err)
	}
	m := mustGetKind(t, ctl)
	m.Description = "now described"
	changed, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m})
	if err != nil || changed.GetResult() != "configured" || changed.GetManifest().GetRevision() != 2 {
		t.Fatalf("change = %v rev %d, %v", changed.GetResult(), changed.GetManifest().GetRevision(), err)
	}
	applyResource(t, ctl, "hello", map[string]any{"name": "world"})
	if _, err := ctl.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "greeting", KindVersion: 1}); code(err) != connect.CodeFailedPrecondition ||
		!strings.Contains(err.Error(), "used by 1 resource") {
		t.Fatalf("delete in use: %v", err)
	}
	if _, err := ctl.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: "greeting", Name: "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "greeting", KindVersion: 1}); err != nil {
		t.Fatalf("delete unused: %v", err)
	}
	if _, err := ctl.GetKind(ctx, &convergev1.GetKindRequest{Kind: "greeting", KindVersion: 1}); code(err) != connect.CodeNotFound {
		t.Fatalf("get deleted kind: %v", err)
	}
	// An illegal manifest names the rule and the reaction.
	_, err = ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{Kind: "bad", KindVersion: 1,
		Reactions: []*convergev1.Reaction{
			{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
			{Name: "teardown", Trigger: "deleteRequested", Emits: []string{"finalizer"}},
		}}})
	if code(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `"teardown"`) || !strings.Contains(err.Error(), "M4") {
		t.Fatalf("illegal manifest: %v", err)
	}
}

func mustGetKind(t *testing.T, ctl interface {
	GetKind(context.Context, *convergev1.GetKindRequest) (*convergev1.GetKindResponse, error)
}) *convergev1.KindManifest {
	t.Helper()
	k, err := ctl.GetKind(context.Background(), &convergev1.GetKindRequest{Kind: "greeting", KindVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	return k.GetManifest()
}

func TestListPagingAndSelectors(t *testing.T) {
	_, ctl, _ := server(t)
	applyGreeting(t, ctl)
	ctx := context.Background()
	req := &convergev1.ApplyResourcesRequest{}
	for i := 0; i < 25; i++ {
		team := "a"
		if i%5 == 0 {
			team = "b"
		}
		req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{Kind: "greeting", KindVersion: 1,
			Name: fmt.Sprintf("r%02d", i), Labels: map[string]string{"team": team}, Spec: mustStruct(t, map[string]any{"name": "x"})})
	}
	if _, err := ctl.ApplyResources(ctx, req); err != nil {
		t.Fatal(err)
	}
	var names []string
	token := ""
	for pages := 0; ; pages++ {
		page, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{PageSize: 10, PageToken: token, Summary: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.GetResources() {
			names = append(names, r.GetName())
			if r.GetSpec() != nil && len(r.GetSpec().GetFields()) > 0 {
				t.Fatal("summary listing carried a spec")
			}
		}
		if token = page.GetNextPageToken(); token == "" {
			if pages != 2 {
				t.Fatalf("%d pages, want 3", pages+1)
			}
			break
		}
	}
	if len(names) != 25 || names[0] != "r00" || names[24] != "r24" {
		t.Fatalf("paged names = %v", names)
	}
	b, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{LabelSelector: "team=b"})
	if err != nil || len(b.GetResources()) != 5 {
		t.Fatalf("team=b: %d, %v", len(b.GetResources()), err)
	}
	if _, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{LabelSelector: "team in (a"}); code(err) != connect.CodeInvalidArgument {
		t.Fatalf("bad selector: %v", err)
	}
	if _, err := ctl.ListResources(ctx, &convergev1.ListResourcesRequest{PageToken: "garbage"}); code(err) != connect.CodeInvalidArgument {
		t.Fatalf("bad token: %v", err)
	}
}

func TestWatchResumesWithoutGapsOrRepeats(t *testing.T) {
	_, ctl, wrk := server(t)
	applyGreeting(t, ctl)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stream, err := ctl.Watch(ctx, &convergev1.WatchRequest{Kind: "greeting"})
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() || !stream.Msg().GetHeartbeat() || stream.Msg().GetCursor() == "" {
		t.Fatalf("first message = %v, %v", stream.Msg(), stream.Err())
	}
	applyResource(t, ctl, "one", map[string]any{"name": "x"})
	var first *convergev1.Change
	for first == nil && stream.Receive() {
		for _, c := range stream.Msg().GetChanges() {
			first = c
		}
	}
	if first == nil || first.GetName() != "one" || first.GetType() != "created" || first.GetPhase() != "Reconciling" {
		t.Fatalf("first change = %v (%v)", first, stream.Err())
	}
	stream.Close()

	// Changes made while no one watches arrive after a resume, in order,
	// each once.
	w, _ := connectWorker(t, wrk, 2)
	task := w.Task()
	w.Result(task.GetLease(), `{"message":"hi"}`)
	w.Ack()
	applyResource(t, ctl, "two", map[string]any{"name": "y"})
	task = w.Task()
	w.Result(task.GetLease(), `{"message":"hi"}`)
	w.Ack()
	resumed, err := ctl.Watch(ctx, &convergev1.WatchRequest{Kind: "greeting", Cursor: first.GetCursor()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(got) < 3 && resumed.Receive() {
		for _, c := range resumed.Msg().GetChanges() {
			got = append(got, c.GetName()+":"+c.GetType()+":"+c.GetPhase())
		}
	}
	want := []string{"one:updated:Ready", "two:created:Reconciling", "two:updated:Ready"}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("resumed changes = %v, want %v", got, want)
		}
	}
}

func TestRESTAndOpenAPI(t *testing.T) {
	base, ctl, _ := server(t)
	applyGreeting(t, ctl)
	resp, err := http.Post(base+"/api/v1/resources", "application/json", strings.NewReader(`{"kind": "greeting", "kind_version": 1, "name": "r", "spec": {"name": "x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("malformed JSON: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Post(base+"/api/v1/resources", "application/json", strings.NewReader(`{"kind": "greeting", "kind_version": 1, "name": "r", "spec": {"name": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"phase":"Reconciling"`) && !strings.Contains(string(body), `"phase": "Reconciling"`) {
		t.Fatalf("apply over REST: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/api/v1/namespaces/default/resources/greeting/missing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing resource: %d", resp.StatusCode)
	}
	resp, err = http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"openapi": "3.`) || !strings.Contains(string(body), "/api/v1/resources:batchApply") {
		t.Fatalf("openapi.json: %.200s", body)
	}
}
