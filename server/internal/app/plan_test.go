package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/testkit"
)

// applyPlanKinds registers "item" (a leaf) and "stack" (a composer of
// spec.count items, capped at one task in flight).
func applyPlanKinds(t *testing.T, ctl convergev1connect.ControlServiceClient) {
	t.Helper()
	for _, m := range []*convergev1.KindManifest{
		{Kind: "item", KindVersion: 1,
			SpecSchema:   mustStruct(t, map[string]any{"type": "object"}),
			StatusSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions:    []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}},
		{Kind: "stack", KindVersion: 1,
			SpecSchema: mustStruct(t, map[string]any{"type": "object",
				"properties": map[string]any{"count": map[string]any{"type": "integer"}, "block": map[string]any{"type": "boolean"}}}),
			StatusSchema: mustStruct(t, map[string]any{"type": "object"}),
			Reactions:    []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "status"}}},
			Policy:       &convergev1.KindPolicy{MaxInflight: 1}},
	} {
		if _, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			t.Fatal(err)
		}
	}
}

func planStackRequest(t *testing.T, name string, spec map[string]any) *convergev1.ApplyResourceRequest {
	return &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: name, Spec: mustStruct(t, spec)}
}

// TestPreviewTasksAreNeverApplied plans changes to composites served by a
// Go SDK worker: the composer runs with Task.Preview set and its answer
// comes back in the plan, while every table but the plan's own fence is
// exactly as it was (no resource, task, task record, event or change
// row), and the previews table is empty again. The stack kind's cap of
// one is held by a real compose that blocks: the preview is answered
// anyway, because a preview takes no share of the cap.
func TestPreviewTasksAreNeverApplied(t *testing.T) {
	db := pgtest.New(t)
	a := startWith(t, func(c *app.Config) { c.DatabaseURL = db.URL })
	base := "http://" + a.Addr().String()
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	pool, err := pgxpool.New(context.Background(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	applyPlanKinds(t, ctl)

	var previews, real atomic.Int32
	release := make(chan struct{})
	w, err := converge.NewWorker(base, converge.WithLogger(slog.New(slog.DiscardHandler)), converge.WithCapacity(4))
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("stack", 1, "compose", func(ctx context.Context, task *converge.Task) (*converge.Result, error) {
		var spec struct {
			Count int  `json:"count"`
			Block bool `json:"block"`
		}
		if err := task.DecodeSpec(&spec); err != nil {
			return nil, converge.Terminal(err)
		}
		if task.Preview() {
			previews.Add(1)
		} else {
			real.Add(1)
			if spec.Block {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
		}
		res := &converge.Result{Compose: true, Status: map[string]any{"items": spec.Count}}
		for i := range spec.Count {
			res.Children = append(res.Children, converge.Child{Kind: "item", KindVersion: 1, Name: fmt.Sprintf("%s-%d", task.Name, i),
				Spec: map[string]any{"index": i}})
		}
		return res, nil
	})
	w.Handle("item", 1, "reconcile", func(context.Context, *converge.Task) (*converge.Result, error) {
		return &converge.Result{Status: map[string]any{"ok": true}}, nil
	})
	runWorker(t, w)
	t.Cleanup(func() { close(release) }) // before the worker's drain, which waits for it
	ctx := context.Background()
	if _, err := ctl.ApplyResource(ctx, planStackRequest(t, "s", map[string]any{"count": 2})); err != nil {
		t.Fatal(err)
	}
	testkit.Poll(t, "stack s to be Ready", func() string {
		r, err := ctl.GetResource(ctx, &convergev1.GetResourceRequest{Kind: "stack", Name: "s"})
		if err != nil {
			return err.Error()
		}
		return r.GetResource().GetPhase()
	}, func(p string) bool { return p == "Ready" })
	// A compose that holds the kind's only slot until the test ends.
	if _, err := ctl.ApplyResource(ctx, planStackRequest(t, "busy", map[string]any{"count": 1, "block": true})); err != nil {
		t.Fatal(err)
	}
	testkit.Poll(t, "the blocking compose to run", func() int32 { return real.Load() }, func(n int32) bool { return n >= 2 })

	// The broker renews the blocked task's lease on its own: the tasks
	// are compared without their lease expiry.
	tasks := func() string {
		var sum string
		if err := pool.QueryRow(ctx, `SELECT coalesce(md5(string_agg((to_jsonb(t) - 'lease_expires_at')::text, '|' ORDER BY t.id)), '')
			FROM tasks t`).Scan(&sum); err != nil {
			t.Fatal(err)
		}
		return sum
	}
	before, tasksBefore := digest(t, pool), tasks()
	plan, err := ctl.PlanChange(ctx, &convergev1.PlanChangeRequest{Resources: []*convergev1.ApplyResourceRequest{
		planStackRequest(t, "s", map[string]any{"count": 3}), planStackRequest(t, "new", map[string]any{"count": 1})}})
	if err != nil {
		t.Fatal(err)
	}
	delete(before, "plans")
	delete(before, "tasks")
	sameDigest(t, "a plan", before, digest(t, pool))
	if tasks() != tasksBefore {
		t.Errorf("a plan changed table tasks")
	}
	var open, fences int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM previews), (SELECT count(*) FROM plans)`).Scan(&open, &fences); err != nil {
		t.Fatal(err)
	}
	if open != 0 || fences != 1 {
		t.Errorf("after the plan: %d previews left, %d plans stored; want 0 and 1", open, fences)
	}
	if n := previews.Load(); n != 2 {
		t.Errorf("the composer ran %d previews; want 2, one per composite", n)
	}
	if tot := plan.GetTotals(); tot.GetCreate() != 2 || tot.GetUnchanged() != 2 || tot.GetNotPreviewed() != 0 {
		t.Fatalf("plan totals %v; want 2 to create (s-2, new-0), 2 unchanged:\n%v", tot, plan.GetComposites())
	}
	if st := plan.GetComposites()[0].GetStatus().GetFields()["items"].GetNumberValue(); st != 3 {
		t.Errorf("the planned status of s: items = %v; want 3", st)
	}
	if n := real.Load(); n != 2 {
		t.Errorf("the composer ran %d real tasks; want 2 (the plan queues none)", n)
	}
}
