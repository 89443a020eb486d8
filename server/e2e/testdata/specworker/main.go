// Command specworker is the worker of the composition end-to-end tests.
// Every kind it serves (specKinds in the e2e tests declares them) does
// what its resource's spec says: a composite's spec lists its children and
// edges, a leaf's spec says what status to report, whether to report
// unhealthy or to fail. A test sets up the behaviour it needs by applying resources, not by
// starting differently built workers.
//
//	specworker -server URL [-capacity N] [-record FILE]
//	           [-compose-delay D] [-fail-teardown NAME-SUBSTRING:MESSAGE]
//
// -record appends one JSON line per compose, childrenSettled and teardown
// to FILE, with the times the handler started and finished, so a test can
// check the order things happened in. -compose-delay makes every compose
// print "composing KIND/NAME" and then sleep, so a test can kill the worker
// mid-compose. -fail-teardown makes the teardown of every resource whose
// name contains the substring fail (transiently) with the message.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "specworker:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("specworker", flag.ContinueOnError)
	server := fs.String("server", "http://localhost:7070", "Converge server URL")
	capacity := fs.Int("capacity", 16, "tasks run at once")
	record := fs.String("record", "", "append a JSON line per compose, childrenSettled and teardown to this file")
	var h handlers
	fs.DurationVar(&h.composeDelay, "compose-delay", 0, "sleep this long before answering each compose")
	failTeardown := fs.String("fail-teardown", "", "NAME-SUBSTRING:MESSAGE: teardowns of matching resources fail with MESSAGE")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *failTeardown != "" {
		sub, msg, ok := strings.Cut(*failTeardown, ":")
		if !ok || sub == "" || msg == "" {
			return errors.New("-fail-teardown: want NAME-SUBSTRING:MESSAGE, both non-empty")
		}
		h.failTeardown = &teardownFault{substring: sub, message: msg}
	}
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("-record: %w", err)
		}
		defer f.Close()
		h.records = &recorder{f: f}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity), converge.WithName("specworker"),
		converge.WithReconnectBackoff(50*time.Millisecond, time.Second))
	if err != nil {
		return err
	}
	h.register(w)
	return w.Run(ctx)
}
