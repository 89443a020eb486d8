// Command lifecycleworker is the worker of the kind-lifecycle end-to-end
// tests. Like specworker it does what its resources' specs say, so a test
// sets up the behaviour it needs by applying manifests and resources with
// conctl rather than by starting differently built workers. The kinds and
// reactions it serves are listed in handlers.go; the tests' manifests
// declare them.
//
//	lifecycleworker -server URL -record FILE [-drift-dir DIR] [-objects-dir DIR] [-capacity N]
//
// -record appends one JSON line to FILE for every task a handler runs
// (kind, version, reaction, trigger, resource, generation, effective
// config, dedup token, and the operation or reactor event it carried) and
// for every default provider config the server pushes (OnConfig), so a
// test can check what the worker saw and when. -drift-dir simulates drift:
// while a file named KIND.NAME exists in DIR, that resource is reported
// unhealthy. -objects-dir holds the vpc kind's external objects
// (vpc.go), for the adoption tests.
package main

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
		fmt.Fprintln(os.Stderr, "lifecycleworker:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("lifecycleworker", flag.ContinueOnError)
	server := fs.String("server", "http://localhost:7070", "Converge server URL")
	capacity := fs.Int("capacity", 8, "tasks run at once")
	record := fs.String("record", "", "append a JSON line per task and per pushed config to this file (required)")
	var h handlers
	fs.StringVar(&h.driftDir, "drift-dir", "", "report a resource unhealthy while DIR/KIND.NAME exists")
	fs.StringVar(&h.objectsDir, "objects-dir", os.TempDir(), "where the vpc kind's external objects live, one file ID.json each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *record == "" {
		return errors.New("-record: a file is required: the tests read what the worker saw from it")
	}
	f, err := os.OpenFile(*record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("-record: %w", err)
	}
	defer f.Close()
	h.records = &recorder{f: f}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w, err := converge.NewWorker(*server, converge.WithCapacity(*capacity), converge.WithName("lifecycleworker"),
		converge.WithReconnectBackoff(50*time.Millisecond, time.Second), converge.WithOnConfig(h.onConfig))
	if err != nil {
		return err
	}
	h.register(w)
	return w.Run(ctx)
}
