package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/server/internal/manifest"
)

// The composite benchmark kinds: bench.fanout composes n leaves;
// bench.chain composes a chain of bench.link, each depending on the
// previous one, with its value flowing along the edge. bench.probe is the
// fairness workload's kind B: a no-op whose status says when its task was
// delivered and run.
const (
	fanoutKind = "bench.fanout"
	chainKind  = "bench.chain"
	linkKind   = "bench.link"
	probeKind  = "bench.probe"
)

// runBenchWorker is `converge-bench worker`: a no-op Go SDK worker for
// every benchmark kind.
func runBenchWorker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	server := fs.String("server", "http://localhost:7070", "Converge server URL")
	capacity := fs.Int("capacity", 256, "tasks run at once")
	leafDelay := fs.Duration("leaf-delay", 0, "handler time of each bench.leaf task")
	stamp := fs.Bool("stamp", false, "bench.leaf statuses carry the task's delivery and handler times, like bench.probe's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity), converge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	ok := json.RawMessage(`{"ok":true}`)
	w.Handle(benchKind, 1, "reconcile", func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		start := time.Now()
		if *leafDelay > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(*leafDelay):
			}
		}
		if *stamp {
			return &converge.Result{Status: stamped(t, start)}, nil
		}
		return &converge.Result{Status: ok}, nil
	})
	w.Handle(probeKind, 1, "reconcile", func(_ context.Context, t *converge.Task) (*converge.Result, error) {
		return &converge.Result{Status: stamped(t, time.Now())}, nil
	})
	w.Handle(fanoutKind, 1, "compose", func(_ context.Context, t *converge.Task) (*converge.Result, error) {
		var spec struct{ N int }
		if err := t.DecodeSpec(&spec); err != nil {
			return nil, converge.Terminal(err)
		}
		children := make([]converge.Child, spec.N)
		for i := range children {
			children[i] = converge.Child{Kind: benchKind, KindVersion: 1, Name: fmt.Sprintf("%s-%05d", t.Name, i),
				Spec: map[string]any{"i": i}}
		}
		return &converge.Result{Status: map[string]any{"children": spec.N}, Compose: true, Children: children}, nil
	})
	w.Handle(chainKind, 1, "compose", func(_ context.Context, t *converge.Task) (*converge.Result, error) {
		var spec struct{ Depth int }
		if err := t.DecodeSpec(&spec); err != nil {
			return nil, converge.Terminal(err)
		}
		res := &converge.Result{Status: map[string]any{"depth": spec.Depth}, Compose: true}
		for i := 0; i < spec.Depth; i++ {
			link := converge.Child{Kind: linkKind, KindVersion: 1, Name: fmt.Sprintf("%s-%03d", t.Name, i), Spec: map[string]any{"index": i}}
			res.Children = append(res.Children, link)
			if i > 0 {
				res.Edges = append(res.Edges, converge.DependsOn(link.Ref(), res.Children[i-1].Ref(),
					converge.FlowFrom("/value", "/upstream")))
			}
		}
		return res, nil
	})
	w.Handle(linkKind, 1, "reconcile", func(_ context.Context, t *converge.Task) (*converge.Result, error) {
		var spec struct{ Upstream int }
		if err := t.DecodeSpec(&spec); err != nil {
			return nil, converge.Terminal(err)
		}
		return &converge.Result{Status: map[string]any{"value": spec.Upstream + 1}}, nil
	})
	return w.Run(ctx)
}

// stamped is a status recording three instants, in microseconds since the
// epoch: d, when the broker took the task from its claim; s, when the
// handler started; e, when it returned. The broker sets a task's deadline
// to the moment it takes a claimed batch plus the kind's task deadline
// (the bench kinds keep the default), so d is that deadline less the
// default: one value shared by every task of one claim.
func stamped(t *converge.Task, start time.Time) map[string]any {
	return map[string]any{
		"ok": true,
		"d":  t.Deadline.Add(-manifest.DefaultTaskDeadline).UnixMicro(),
		"s":  start.UnixMicro(),
		"e":  time.Now().UnixMicro(),
	}
}
