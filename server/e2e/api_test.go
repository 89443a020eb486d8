//go:build unix

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// callTimeout bounds one API call.
const callTimeout = 10 * time.Second

// pollInterval is how often state is polled while waiting.
const pollInterval = 100 * time.Millisecond

func mustStruct(t *testing.T, v map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatalf("structpb.NewStruct(%v): %v", v, err)
	}
	return s
}

// leafKind is a kind served by one specChange reaction "reconcile" that
// emits status: the shape of the leaf and noop examples' kinds. Its spec is
// {"name": <non-empty string>, "greeting": <string>}.
func leafKind(t *testing.T, kind string) *convergev1.KindManifest {
	t.Helper()
	return &convergev1.KindManifest{
		Kind: kind, KindVersion: 1, Owner: "e2e",
		SpecSchema: mustStruct(t, map[string]any{
			"type": "object", "required": []any{"name"}, "additionalProperties": false,
			"properties": map[string]any{
				"name":     map[string]any{"type": "string", "minLength": 1},
				"greeting": map[string]any{"type": "string"},
			},
		}),
		StatusSchema: mustStruct(t, map[string]any{
			"type": "object", "properties": map[string]any{"message": map[string]any{"type": "string"}},
		}),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}
}

// applyKind applies a kind manifest over the API.
func applyKind(t *testing.T, c *client.Client, m *convergev1.KindManifest) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if _, err := c.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
		t.Fatalf("apply kind %s v%d: %v", m.GetKind(), m.GetKindVersion(), err)
	}
}

// applyResources creates n resources of kind (v1) named prefix-0001… in
// one transaction and returns their names.
func applyResources(t *testing.T, c *client.Client, kind, prefix string, n int) []string {
	t.Helper()
	req := &convergev1.ApplyResourcesRequest{}
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i+1)
		req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{
			Kind: kind, KindVersion: 1, Name: names[i], Spec: mustStruct(t, map[string]any{"name": names[i]}),
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := c.ApplyResources(ctx, req)
	if err != nil {
		t.Fatalf("apply %d %s resources: %v", n, kind, err)
	}
	if got := len(resp.GetResults()); got != n {
		t.Fatalf("apply %d %s resources: %d results", n, kind, got)
	}
	for i, r := range resp.GetResults() {
		if r.GetResult() != "created" {
			t.Fatalf("apply %s/%s: result %q, want created", kind, names[i], r.GetResult())
		}
	}
	return names
}

func getResource(t *testing.T, c *client.Client, kind, name string) *convergev1.Resource {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	resp, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Kind: kind, Name: name})
	if err != nil {
		t.Fatalf("get resource %s/%s: %v", kind, name, err)
	}
	return resp.GetResource()
}

// listResources lists every resource of kind (in any phase when phases is
// empty), without spec and status.
func listResources(t *testing.T, c *client.Client, kind string, phases ...string) []*convergev1.Resource {
	t.Helper()
	all, err := tryListResources(c, kind, phases...)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func tryListResources(c *client.Client, kind string, phases ...string) ([]*convergev1.Resource, error) {
	req := &convergev1.ListResourcesRequest{Kind: kind, Phases: phases, Summary: true, PageSize: 1000}
	var out []*convergev1.Resource
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := c.ListResources(ctx, req)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list %s resources: %w", kind, err)
		}
		out = append(out, resp.GetResources()...)
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// waitReadyCount waits until at least n resources of kind are Ready and
// returns how many are. Failing calls count as "not yet": the server or
// its database may be restarting.
func waitReadyCount(t *testing.T, c *client.Client, kind string, n int, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ready, err := tryListResources(c, kind, client.PhaseReady)
		if err == nil && len(ready) >= n {
			return len(ready)
		}
		if time.Now().After(deadline) {
			all, listErr := tryListResources(c, kind)
			t.Fatalf("after %s, %d %s resources are Ready, want at least %d; phases: %s (last errors: %v, %v)",
				timeout, len(ready), kind, n, phaseCounts(all), err, listErr)
		}
		time.Sleep(pollInterval)
	}
}

// waitAllReady waits until all n resources of kind are Ready and returns
// them. Failing calls count as "not yet", as for waitReadyCount.
func waitAllReady(t *testing.T, c *client.Client, kind string, n int, timeout time.Duration) []*convergev1.Resource {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		all, err := tryListResources(c, kind)
		ready := 0
		for _, r := range all {
			if r.GetPhase() == client.PhaseReady {
				ready++
			}
		}
		if err == nil && len(all) == n && ready == n {
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %d of %d %s resources are Ready (%d listed, last error: %v); phases: %s; not ready: %s",
				timeout, ready, n, kind, len(all), err, phaseCounts(all), describeSome(all, notReady))
		}
		time.Sleep(pollInterval)
	}
}

// events lists the events recorded for resources of kind, newest first.
func events(t *testing.T, c *client.Client, kind string) []*convergev1.Event {
	t.Helper()
	var out []*convergev1.Event
	req := &convergev1.ListEventsRequest{Kind: kind, PageSize: 1000}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		resp, err := c.ListEvents(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("list %s events: %v", kind, err)
		}
		out = append(out, resp.GetEvents()...)
		if resp.GetNextPageToken() == "" {
			return out
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// eventsWithReason lists the events of kind with one reason.
func eventsWithReason(t *testing.T, c *client.Client, kind, reason string) []*convergev1.Event {
	t.Helper()
	var out []*convergev1.Event
	for _, e := range events(t, c, kind) {
		if e.GetReason() == reason {
			out = append(out, e)
		}
	}
	return out
}

// condition returns r's condition of type typ, or nil.
func condition(r *convergev1.Resource, typ string) *convergev1.Condition {
	for _, c := range r.GetConditions() {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}
