// Command landingzone is the composition example: one worker serving a
// composer kind and the three leaf kinds it composes.
//
// A landingzone resource asks for N accounts. Its composer emits, for each
// account i, an account, a VPC in that account and a default route in that
// VPC, with edges that make each VPC wait for its account and each route
// for its VPC, and value flows that carry the account's account_id into
// the VPC's spec and the VPC's vpc_id into the route's spec. The leaves
// pretend to create the cloud resources and report deterministic ids.
//
//	landingzone [-server URL] [-capacity N] [-delay DURATION]
//	            [-fail KIND:NAME-SUBSTRING:MESSAGE ...]
//
// -fail makes matching tasks fail terminally, to show a culprit named on
// the landing zone's root. SIGINT or SIGTERM drains the worker: it stops
// taking tasks, finishes the running ones, reports their results and exits.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/convergehq/converge/sdk-go/converge"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "landingzone:", err)
		os.Exit(1)
	}
}

// defaultCapacity is higher than the SDK's: a landing zone fans out into
// many small leaf tasks.
const defaultCapacity = 64

func run(args []string) error {
	fs := flag.NewFlagSet("landingzone", flag.ContinueOnError)
	server := fs.String("server", "", "Converge server URL (default $CONVERGE_SERVER, else "+converge.DefaultServerURL+")")
	capacity := fs.Int("capacity", defaultCapacity, "tasks run at once")
	var h handlers
	fs.DurationVar(&h.delay, "delay", 0, "simulated work per leaf task (account, vpc, route), e.g. 200ms")
	fs.Var(&h.faults, "fail", "KIND:NAME-SUBSTRING:MESSAGE: tasks of KIND whose resource name contains NAME-SUBSTRING fail terminally with MESSAGE (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if h.delay < 0 {
		return fmt.Errorf("-delay %s: must not be negative", h.delay)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity))
	if err != nil {
		return err
	}
	h.register(w)
	return w.Run(ctx)
}
