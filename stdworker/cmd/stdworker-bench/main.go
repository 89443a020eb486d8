// Command stdworker-bench measures what serving a reaction with a program
// (the stdio provider) costs per task compared with a Go SDK handler.
//
//	stdworker-bench [-server URL] [-tasks 1000] [-program FILE]
//	stdworker-bench -terraform -tf-cli-config FILE [-tasks 20]
//
// It prints two figures, each the median (and p90) over -tasks no-op tasks:
//
//   - handler: one call of the stdio handler (start the program in its own
//     process group, write the request, read and check the response) next
//     to one call of a Go handler, in this process, with no server;
//   - end to end, against the server at -server (e.g. `converge dev`): the
//     time from a spec change to the resource being Ready again, one task at
//     a time, for a kind served by a Go SDK worker and for one served by the
//     stdio provider; the difference is the stdio overhead per task.
//
// With -terraform it measures stdterraform instead: one reconcile of a
// time_static through the generated kind tf.time.static against the same
// resource in a hand-written std.terraform module.
//
// The default program is a no-op shell script that reads its request and
// prints {"status":{"ok":true}}.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stdworker-bench:", err)
		os.Exit(1)
	}
}

// noopProgram is the default stdio program.
const noopProgram = "#!/bin/sh\ncat >/dev/null\necho '{\"status\":{\"ok\":true}}'\n"

func run(args []string) error {
	fs := flag.NewFlagSet("stdworker-bench", flag.ContinueOnError)
	server := fs.String("server", envOr("CONVERGE_SERVER", "http://localhost:7070"), "Converge server URL (env CONVERGE_SERVER); empty: handler figures only")
	tasks := fs.Int("tasks", 1000, "no-op tasks per measurement")
	program := fs.String("program", "", "stdio program to measure (default: a no-op /bin/sh script)")
	tf := fs.Bool("terraform", false, "measure stdterraform instead: a generated kind against a hand-written module (needs -tf-cli-config)")
	tfBinary := fs.String("terraform-binary", envOr("TERRAFORM_BINARY", "terraform"), "with -terraform: the terraform or tofu binary (env TERRAFORM_BINARY)")
	tfCLIConfig := fs.String("tf-cli-config", os.Getenv("TF_CLI_CONFIG_FILE"), "with -terraform: a terraform CLI configuration installing hashicorp/time 0.14.2 (e.g. from scripts/find-tf-providers.sh's mirror; env TF_CLI_CONFIG_FILE)")
	catalogDir := fs.String("catalog", "catalog", "with -terraform: the catalog holding tf-time/tf.time.static")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tasks < 1 {
		return fmt.Errorf("-tasks: %d: want at least 1", *tasks)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *tf {
		if *tfCLIConfig == "" {
			return fmt.Errorf("-tf-cli-config: required with -terraform, so that no provider is downloaded")
		}
		return terraformFigures(ctx, *catalogDir, *tfBinary, *tfCLIConfig, *tasks)
	}

	if *program == "" {
		dir, err := os.MkdirTemp("", "stdworker-bench-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*program = filepath.Join(dir, "noop.sh")
		if err := os.WriteFile(*program, []byte(noopProgram), 0o755); err != nil {
			return err
		}
	}

	fmt.Printf("per-task cost over %d no-op tasks (median, p90)\n", *tasks)
	goH, stdioH, err := handlerFigures(ctx, *program, *tasks)
	if err != nil {
		return err
	}
	fmt.Printf("handler call   go: %s   stdio: %s   stdio overhead: %s\n", goH, stdioH, stdioH.minus(goH))
	if *server == "" {
		return nil
	}
	goE, stdioE, err := endToEndFigures(ctx, *server, *program, *tasks)
	if err != nil {
		return err
	}
	fmt.Printf("end to end     go: %s   stdio: %s   stdio overhead: %s\n", goE, stdioE, stdioE.minus(goE))
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
