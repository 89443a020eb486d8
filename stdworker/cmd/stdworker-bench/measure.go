package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/stdio"
)

// figure is a distribution's median and 90th percentile.
type figure struct{ median, p90 time.Duration }

func (f figure) String() string {
	return fmt.Sprintf("%s (p90 %s)", round(f.median), round(f.p90))
}

func (f figure) minus(g figure) string { return round(f.median - g.median).String() }

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Millisecond || d < -time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > time.Microsecond || d < -time.Microsecond:
		return d.Round(10 * time.Nanosecond)
	}
	return d
}

func summarize(samples []time.Duration) figure {
	slices.Sort(samples)
	return figure{median: samples[len(samples)/2], p90: samples[len(samples)*9/10]}
}

var reconcile = &convergev1.Reaction{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}

var okStatus = json.RawMessage(`{"ok":true}`)

func goHandler(context.Context, *converge.Task) (*converge.Result, error) {
	return &converge.Result{Status: okStatus}, nil
}

// handlerFigures times n calls of a Go handler and of the stdio handler.
func handlerFigures(ctx context.Context, program string, n int) (goF, stdioF figure, err error) {
	h, err := stdio.Handler(stdio.Settings{Command: []string{program}}, reconcile)
	if err != nil {
		return goF, stdioF, err
	}
	task := &converge.Task{Kind: "bench.stdio", KindVersion: 1, Reaction: "reconcile", Trigger: "specChange",
		Namespace: "default", Name: "r", Generation: 1, Spec: json.RawMessage(`{"i":1}`), Attempt: 1}
	time1 := func(h converge.HandlerFunc) (time.Duration, error) {
		begin := time.Now()
		_, err := h(ctx, task)
		return time.Since(begin), err
	}
	goS, stdioS := make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		if goS[i], err = time1(goHandler); err != nil {
			return goF, stdioF, err
		}
		if stdioS[i], err = time1(h); err != nil {
			return goF, stdioF, fmt.Errorf("stdio handler: %w", err)
		}
	}
	return summarize(goS), summarize(stdioS), nil
}

// endToEndFigures times n spec changes of a resource until it is Ready
// again, once for a kind served by a Go handler and once for a kind served
// by the stdio provider, each on a worker of its own in this process.
func endToEndFigures(ctx context.Context, server, program string, n int) (goF, stdioF figure, err error) {
	api := client.New(server)
	h, err := stdio.Handler(stdio.Settings{Command: []string{program}}, reconcile)
	if err != nil {
		return goF, stdioF, err
	}
	goF, err = endToEnd(ctx, api, server, "bench.stdworker-go", goHandler, n)
	if err != nil {
		return goF, stdioF, err
	}
	stdioF, err = endToEnd(ctx, api, server, "bench.stdworker-stdio", h, n)
	return goF, stdioF, err
}

func endToEnd(ctx context.Context, api *client.Client, server, kind string, h converge.HandlerFunc, n int) (figure, error) {
	manifest := &convergev1.KindManifest{Kind: kind, KindVersion: 1, Description: "stdworker-bench",
		Reactions: []*convergev1.Reaction{reconcile}}
	if _, err := api.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: manifest}); err != nil {
		return figure{}, fmt.Errorf("applying kind %s: %w", kind, err)
	}
	w, err := converge.NewWorker(server, converge.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return figure{}, err
	}
	wctx, stop := context.WithCancel(ctx)
	w.Handle(kind, 1, "reconcile", h)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()

	name := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	samples := make([]time.Duration, 0, n)
	for i := range n + 1 { // the first round warms up: connection, kind caches
		spec, _ := structpb.NewStruct(map[string]any{"i": i})
		begin := time.Now()
		resp, err := api.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: kind, KindVersion: 1, Name: name, Spec: spec})
		if err != nil {
			return figure{}, fmt.Errorf("applying %s/%s: %w", kind, name, err)
		}
		gen := resp.GetResource().GetGeneration()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err = api.WaitFor(wctx, "", kind, name, func(r *convergev1.Resource) bool {
			return r.GetSyncedGeneration() >= gen && client.IsReady(r)
		})
		cancel()
		if err != nil {
			return figure{}, fmt.Errorf("waiting for %s/%s generation %d: %w", kind, name, gen, err)
		}
		if i > 0 {
			samples = append(samples, time.Since(begin))
		}
	}
	_, _ = api.DeleteResource(ctx, &convergev1.DeleteResourceRequest{Kind: kind, Name: name})
	return summarize(samples), nil
}
