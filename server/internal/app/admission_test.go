package app_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestAdmissionBoundsTheBacklog: with --max-backlog 5 and no worker, a
// kind's sixth queued reconcile is refused with ResourceExhausted naming
// the kind and the bound, with a retry hint; a dry run and another kind
// are admitted; and the Go client, retrying after the hint, gets its
// apply in once a worker drains the backlog.
func TestAdmissionBoundsTheBacklog(t *testing.T) {
	base, _, ctl := serverWith(t, func(c *app.Config) { c.MaxBacklog = 5 })
	ctx := context.Background()
	for _, k := range []string{"adm.a", "adm.b"} {
		applyFairKind(t, ctl, k)
	}
	batch := func(kind string, from, n int) *convergev1.ApplyResourcesRequest {
		req := &convergev1.ApplyResourcesRequest{}
		for i := from; i < from+n; i++ {
			req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{
				Kind: kind, KindVersion: 1, Name: fmt.Sprintf("r-%d", i), Spec: mustStruct(t, map[string]any{})})
		}
		return req
	}
	if _, err := ctl.ApplyResources(ctx, batch("adm.a", 0, 5)); err != nil {
		t.Fatalf("five under a bound of five: %v", err)
	}
	_, err := ctl.ApplyResources(ctx, batch("adm.a", 5, 1))
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		t.Fatalf("a sixth with five queued and a bound of five: %v, want ResourceExhausted", err)
	}
	if msg := ce.Message(); !strings.Contains(msg, "adm.a") || !strings.Contains(msg, "--max-backlog 5") {
		t.Errorf("the refusal %q does not name the kind and the bound", msg)
	}
	if wait, ok := client.RetryAfter(err); !ok || wait <= 0 {
		t.Errorf("the refusal carries no retry hint (%s: %q)", client.RetryAfterHeader, ce.Meta().Get(client.RetryAfterHeader))
	}
	if ce.Meta().Get("Retry-After") == "" {
		t.Error("the refusal has no Retry-After header")
	}
	// Over REST: 429 with Retry-After.
	body := `{"resources":[{"kind":"adm.a","kindVersion":1,"name":"rest-1","spec":{}}]}`
	resp, err := http.Post(base+"/api/v1/resources:batchApply", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.Header.Get(client.RetryAfterHeader) == "" {
		t.Errorf("REST apply over the bound: %s with Retry-After %q and %s %q, want 429 with both",
			resp.Status, resp.Header.Get("Retry-After"), client.RetryAfterHeader, resp.Header.Get(client.RetryAfterHeader))
	}
	dry := batch("adm.a", 5, 1)
	dry.DryRun = true
	if _, err := ctl.ApplyResources(ctx, dry); err != nil {
		t.Errorf("a dry run was refused: %v", err)
	}
	if _, err := ctl.ApplyResources(ctx, batch("adm.b", 0, 1)); err != nil {
		t.Errorf("another kind's apply was refused: %v", err)
	}

	// The client retries after the hint until a worker has drained adm.a.
	var waits int
	c := client.New(base, client.WithBackpressure(time.Minute, func(string, time.Duration, error) { waits++ }))
	done := make(chan error, 1)
	go func() {
		_, err := c.ApplyResources(ctx, batch("adm.a", 5, 1))
		done <- err
	}()
	wrk := convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
	w, _ := connectWorkerServing(t, wrk, 10, []*convergev1.ReactionRef{{Kind: "adm.a", KindVersion: 1, Reaction: "reconcile"}})
	tasks := taskStream(w)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the retrying client's apply: %v", err)
			}
			if waits == 0 {
				t.Error("the client's apply went in without waiting once, with the backlog at the bound")
			}
			return
		case h := <-tasks:
			w.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Results{Results: &convergev1.Results{Results: []*convergev1.TaskResult{{
				Lease: h.task.GetLease(), Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{Status: []byte(`{}`)}}}}}}})
		case <-deadline:
			t.Fatal("the retrying client's apply did not go in within 30 s of a worker draining the backlog")
		}
	}
}
