// Command noop is the benchmark's worker: it serves the given reactions and
// reports the status {"ok":true} (or -status) for every task, at once or
// after -delay, so a benchmark measures the control plane rather than the
// handler.
//
//	noop [-server URL] [-kinds kind:version:reaction,...] [-capacity N] [-delay DURATION] [-status JSON]
//
// SIGINT or SIGTERM drains it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "noop:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("noop", flag.ContinueOnError)
	server := fs.String("server", "", "Converge server URL (default $CONVERGE_SERVER, else "+converge.DefaultServerURL+")")
	kinds := fs.String("kinds", "bench.leaf:1:reconcile", "reactions to serve, as kind:version:reaction,...")
	capacity := fs.Int("capacity", 256, "tasks run at once")
	delay := fs.Duration("delay", 0, "simulated work per task")
	status := fs.String("status", string(okStatus), "the status every task reports, a JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var probe map[string]any
	if err := json.Unmarshal([]byte(*status), &probe); err != nil {
		return fmt.Errorf("-status: want a JSON object: %v", err)
	}
	reactions, err := parseReactions(*kinds)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity))
	if err != nil {
		return err
	}
	register(w, reactions, *delay, json.RawMessage(*status))
	return w.Run(ctx)
}

// register serves every reaction on w with one handler.
func register(w *converge.Worker, reactions []reaction, delay time.Duration, status json.RawMessage) {
	h := handler(delay, status)
	for _, r := range reactions {
		w.Handle(r.kind, r.version, r.name, h)
	}
}

// okStatus is every task's status unless -status says otherwise.
var okStatus = json.RawMessage(`{"ok":true}`)

func handler(delay time.Duration, status json.RawMessage) converge.HandlerFunc {
	return func(ctx context.Context, _ *converge.Task) (*converge.Result, error) {
		if delay > 0 {
			timer := time.NewTimer(delay)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &converge.Result{Status: status}, nil
	}
}

type reaction struct {
	kind    string
	version int
	name    string
}

// parseReactions reads "kind:version:reaction,..." into distinct reactions.
func parseReactions(list string) ([]reaction, error) {
	var out []reaction
	seen := map[reaction]bool{}
	for i, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		parts := strings.Split(item, ":")
		if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
			return nil, fmt.Errorf("-kinds entry %d %q: want kind:version:reaction", i+1, item)
		}
		v, err := strconv.Atoi(parts[1])
		if err != nil || v < 1 {
			return nil, fmt.Errorf("-kinds entry %d %q: version %q must be an integer >= 1", i+1, item, parts[1])
		}
		r := reaction{kind: parts[0], version: v, name: parts[2]}
		if seen[r] {
			return nil, fmt.Errorf("-kinds entry %d %q: listed twice", i+1, item)
		}
		seen[r] = true
		out = append(out, r)
	}
	return out, nil
}
