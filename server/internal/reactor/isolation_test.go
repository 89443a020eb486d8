package reactor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

// A reactor whose worker never answers holds only its own deliveries:
// another reactor bound to the same transitions gets every one of its
// own, through a real server and the Go SDK.
func TestSlowReactorDelaysNoOther(t *testing.T) {
	db := pgtest.New(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := app.Start(context.Background(), app.Config{
		DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleAll,
		Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
			PollInterval: 200 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
		Log: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	base := "http://" + srv.Addr().String()
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	ctx := context.Background()

	object, err := structpb.NewStruct(map[string]any{"type": "object"})
	if err != nil {
		t.Fatal(err)
	}
	react := []*convergev1.Reaction{{Name: "react", Trigger: "reactor", Emits: []string{"sideEffect"}}}
	for _, m := range []*convergev1.KindManifest{
		{Kind: "leaf", KindVersion: 1, SpecSchema: object,
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}},
		{Kind: "stuck", KindVersion: 1, Reactions: react},
		{Kind: "pager", KindVersion: 1, Reactions: react},
	} {
		if _, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			t.Fatal(err)
		}
	}
	for _, reactor := range []string{"stuck", "pager"} {
		if _, err := ctl.ApplyReactorBinding(ctx, &convergev1.ApplyReactorBindingRequest{Binding: &convergev1.ReactorBinding{
			Name: "to-" + reactor, WatchKind: "leaf", Transitions: []string{"created"}, ReactorKind: reactor, ReactorKindVersion: 1,
		}}); err != nil {
			t.Fatal(err)
		}
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer func() { stopWorkers(); workers.Wait() }()
	serve := func(kind string, h converge.HandlerFunc) {
		w, err := converge.NewWorker(base, converge.WithName(kind), converge.WithCapacity(2), converge.WithLogger(quiet),
			converge.WithDrainTimeout(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		w.Handle(kind, 1, "react", h)
		workers.Add(1)
		go func() {
			defer workers.Done()
			if err := w.Run(wctx); err != nil {
				t.Errorf("%s worker: %v", kind, err)
			}
		}()
	}
	stuckStarted := make(chan struct{}, 16)
	serve("stuck", func(ctx context.Context, _ *converge.Task) (*converge.Result, error) {
		stuckStarted <- struct{}{}
		<-ctx.Done() // never answers while the test runs
		return nil, ctx.Err()
	})
	paged := make(chan *converge.Task, 16)
	serve("pager", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
		paged <- task
		return nil, nil
	})

	const n = 5
	for i := range n {
		if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "leaf", KindVersion: 1,
			Name: fmt.Sprint("r", i), Spec: object}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.After(20 * time.Second)
	select {
	case <-stuckStarted:
	case <-deadline:
		t.Fatal("the stuck reactor never got a delivery")
	}
	seen := map[string]bool{}
	for len(seen) < n {
		select {
		case task := <-paged:
			e := task.Reactor
			if e == nil || e.Binding != "to-pager" || e.Transition != converge.TransitionCreated || e.Watched.Kind != "leaf" {
				t.Fatalf("pager got %+v", task)
			}
			seen[e.Watched.Name] = true
		case <-deadline:
			t.Fatalf("the pager got %d of %d deliveries while the stuck reactor held its own", len(seen), n)
		}
	}
}
