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

	"github.com/convergehq/converge/sdk-go/converge"
)

// The composite benchmark kinds: bench.fanout composes n leaves;
// bench.chain composes a chain of bench.link, each depending on the
// previous one, with its value flowing along the edge.
const (
	fanoutKind = "bench.fanout"
	chainKind  = "bench.chain"
	linkKind   = "bench.link"
)

// runBenchWorker is `converge-bench worker`: a no-op Go SDK worker for
// every benchmark kind.
func runBenchWorker(args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	server := fs.String("server", "http://localhost:7070", "Converge server URL")
	capacity := fs.Int("capacity", 256, "tasks run at once")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := converge.NewWorker(*server, converge.WithCapacity(*capacity), converge.WithLogger(slog.New(slog.DiscardHandler)))
	ok := json.RawMessage(`{"ok":true}`)
	w.Handle(benchKind, 1, "reconcile", func(context.Context, *converge.Task) (*converge.Result, error) {
		return &converge.Result{Status: ok}, nil
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
