// Command leaf is the walkthrough worker: it serves kind greeting v1,
// reaction reconcile, and reports {"message": "<greeting>, <name>!"} for
// every greeting resource. Flags make it fail or slow down on demand, to
// show how failures and in-flight work look in Converge.
//
//	leaf [-server URL] [-capacity N] [-delay DURATION] [-drain-timeout DURATION]
//	     [-fail-terminal MSG | -fail-transient MSG] [-reason CODE]
//
// SIGINT or SIGTERM drains it: it stops taking tasks, finishes the running
// ones, reports their results and exits. Tasks still running when the
// drain timeout ends are handed back to the server for another worker.
//
// Its spec and status types, and HandleGreetingV1Reconcile, are generated
// from greeting.yaml into kinds_gen.go; run go generate after editing the
// manifest.
package main

//go:generate go run github.com/convergehq/converge/server/cmd/converge-go-types -o kinds_gen.go -package main greeting.yaml

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "leaf:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("leaf", flag.ContinueOnError)
	server := fs.String("server", "", "Converge server URL (default $CONVERGE_SERVER, else "+converge.DefaultServerURL+")")
	capacity := fs.Int("capacity", converge.DefaultCapacity, "tasks run at once")
	var g greeter
	fs.StringVar(&g.failTerminal, "fail-terminal", "", "fail every task terminally with this message")
	fs.StringVar(&g.failTransient, "fail-transient", "", "fail every task transiently (retried) with this message")
	fs.StringVar(&g.reason, "reason", "", "with -fail-*: the failure's reason code, e.g. QuotaExceeded")
	fs.DurationVar(&g.delay, "delay", 0, "simulated work per task, e.g. 2s")
	drainTimeout := fs.Duration("drain-timeout", converge.DefaultDrainTimeout, "on SIGTERM, how long running tasks may take before they are handed back")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if g.failTerminal != "" && g.failTransient != "" {
		return errors.New("set at most one of -fail-terminal and -fail-transient")
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity), converge.WithDrainTimeout(*drainTimeout))
	if err != nil {
		return err
	}
	g.register(w)
	return w.Run(ctx)
}

// register serves kind greeting v1's reconcile reaction on w.
func (g greeter) register(w *converge.Worker) {
	HandleGreetingV1Reconcile(w, g.reconcile)
}

// greeter reconciles greetings, failing or dawdling as its flags say.
type greeter struct {
	failTerminal  string
	failTransient string
	reason        string
	delay         time.Duration
}

// reconcile gets the spec decoded: a spec that does not fit GreetingV1Spec
// fails terminally, naming the field, before reconcile is called.
func (g greeter) reconcile(ctx context.Context, t *converge.TypedTask[GreetingV1Spec]) (*converge.TypedResult[GreetingV1Status], error) {
	if g.delay > 0 {
		timer := time.NewTimer(g.delay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch {
	case g.failTerminal != "":
		return nil, converge.Terminal(g.fail(g.failTerminal))
	case g.failTransient != "":
		return nil, g.fail(g.failTransient)
	}
	greeting := "Hello"
	if g := t.Spec.Greeting; g != nil && *g != "" {
		greeting = *g
	}
	return converge.StatusResult(GreetingV1Status{Message: new(greeting + ", " + t.Spec.Name + "!")}), nil
}

// fail makes the flags' failure, with its reason code if one is given.
func (g greeter) fail(msg string) error {
	err := errors.New(msg)
	if g.reason != "" {
		return converge.Reason(g.reason, err)
	}
	return err
}
