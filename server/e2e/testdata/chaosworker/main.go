// Command chaosworker is the worker of the chaos end-to-end test
// (TestChaos). It serves one leaf reaction, takes -delay per task, and
// logs every handler execution to a file, so the test can tell which
// (resource, generation) pairs ran more than once and whether each
// duplicate had a fault to excuse it.
//
//	chaosworker -server URL -record FILE [-kind KIND] [-capacity N] [-delay D]
//
// Each execution writes two JSON lines to FILE: one when the handler
// starts and one when it returns. A worker killed with SIGKILL leaves
// starts without ends; every line is written whole with one write(2) on a
// file opened for appending, so what the kernel accepted survives the
// kill and a reader never sees half a line.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("chaosworker", flag.ContinueOnError)
	server := fs.String("server", "http://localhost:7070", "Converge server URL")
	record := fs.String("record", "", "append a JSON line per handler start and end to this file (required)")
	kind := fs.String("kind", "chaos", "kind (version 1, reaction reconcile) to serve")
	capacity := fs.Int("capacity", 8, "tasks run at once")
	delay := fs.Duration("delay", 200*time.Millisecond, "simulated work per task")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *record == "" {
		return errors.New("-record: a file is required: the chaos test reads the executions from it")
	}
	if *delay < 0 {
		return fmt.Errorf("-delay %s: must not be negative", *delay)
	}
	f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("-record: %w", err)
	}
	defer f.Close()
	h := &handler{log: &execLog{f: f}, delay: *delay}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity), converge.WithName("chaosworker"),
		converge.WithReconnectBackoff(50*time.Millisecond, time.Second))
	if err != nil {
		return err
	}
	w.Handle(*kind, 1, "reconcile", h.reconcile)
	return w.Run(ctx)
}

// line is one line of the -record file.
type line struct {
	// Event is "start" or "end".
	Event      string `json:"event"`
	Name       string `json:"name"`
	Generation int64  `json:"generation"`
	Attempt    int    `json:"attempt"`
	DedupToken string `json:"dedup_token"`
	// At is the wall clock in Unix nanoseconds, comparable with the
	// database's clock on the same machine.
	At int64 `json:"at"`
	// Outcome is "ok" or the handler's error, on end lines.
	Outcome string `json:"outcome,omitempty"`
}

// execLog appends lines to the record file.
type execLog struct {
	mu sync.Mutex
	f  *os.File
}

func (l *execLog) add(ln line) {
	b, err := json.Marshal(ln)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker: record:", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(b, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker: record:", err)
	}
}

type handler struct {
	log   *execLog
	delay time.Duration
}

// spec is the chaos kind's spec.
type spec struct {
	Name     string `json:"name"`
	Greeting string `json:"greeting"`
}

func (h *handler) reconcile(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	base := line{Name: t.Name, Generation: t.Generation, Attempt: t.Attempt, DedupToken: t.DedupToken}
	start := base
	start.Event, start.At = "start", time.Now().UnixNano()
	h.log.add(start)
	res, err := h.work(ctx, t)
	end := base
	end.Event, end.At, end.Outcome = "end", time.Now().UnixNano(), "ok"
	if err != nil {
		end.Outcome = err.Error()
	}
	h.log.add(end)
	return res, err
}

func (h *handler) work(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	timer := time.NewTimer(h.delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var s spec
	if err := t.DecodeSpec(&s); err != nil {
		// The server validated the spec against the kind's schema: a retry
		// cannot fix a broken contract.
		return nil, converge.Terminal(err)
	}
	return &converge.Result{Status: map[string]any{"message": s.Greeting + ", " + s.Name + "!"}}, nil
}
