// Command stdworker serves kinds without an SDK worker: a bash script, a
// Python file or any program (stdio), an inline shell script (std.shell),
// and the other std providers. It runs one SDK worker per served kind
// version. See docs/stdworker.md.
//
//	stdworker kinds apply           # teach the server the std kinds
//	stdworker                       # serve every std kind on the server
//	stdworker --config stdworker.yaml
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes stdworker with args and returns the exit code: 0, or 1 on
// any error, which it has printed on stderr (as conctl does). A mistake in
// the command line itself is followed by the usage of the command it was
// meant for.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "stdworker:", err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprint(stderr, "\n"+cmd.UsageString())
	}
	return 1
}

// usageError is a mistake in the command line: an unknown subcommand or
// flag, or arguments where none belong.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// subcommandsOnly is the Args of every stdworker command, none of which
// takes arguments: on a command with subcommands an argument is a
// subcommand that does not exist (without this, cobra prints the help of
// a group for "kinds bogus" and exits 0); on any other it is refused.
func subcommandsOnly(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(names) == 0 {
		return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return usageError{fmt.Errorf("unknown command %q for %q (one of %s)", args[0], cmd.CommandPath(), strings.Join(names, ", "))}
}

func rootCmd() *cobra.Command {
	var f flags
	cmd := &cobra.Command{
		Use:   "stdworker",
		Short: "Serve kinds with programs, shell scripts and the std providers",
		Long: `stdworker serves kinds without an SDK worker. It runs one worker per kind version,
each with its own stream and parallelism, and drains them all on SIGTERM or SIGINT (running
tasks get --drain-timeout to finish; then their programs' process groups are killed).

What it serves:
  --config FILE   the kinds the file lists, each with its provider and settings:
                    kinds:
                      - kind: backup
                        version: 1
                        provider: stdio  # stdio, stdshell, stdterraform, stdcel, stdstarlark
                        parallelism: 4
                        settings: {command: ["./backup.sh"], timeout_seconds: 60}
                  Relative paths in stdio's and stdstarlark's settings are resolved
                  against the file's directory.
  (no --config)   every std kind on the server: std.shell@1 (stdshell), std.terraform@1
                  (stdterraform) and std.graph@1 (stdcel), the kinds that applied
                  std.graph resources define, and the kinds generated from Terraform
                  providers ("stdworker kinds generate", stdterraform; their binary and
                  credentials from their provider configs); apply the std kinds first with
                  "stdworker kinds apply". A std kind whose provider cannot start here
                  (say, no terraform binary) is logged and skipped, unless --kinds names it.
  --kinds         restricts either set to the kind versions listed.

The manifests of user kinds served by stdio must be applied to the server first
(conctl apply -f kind.yaml).`,
		Example: `  stdworker kinds apply
  stdworker
  stdworker --config stdworker.yaml --kinds backup@1 --parallelism 8
  stdworker --server https://converge.example.com --tls-ca ca.pem --tls-cert w.pem --tls-key w-key.pem`,
		Args:          subcommandsOnly,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), f)
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	f.register(cmd)
	cmd.AddCommand(kindsCmd(&f))
	return cmd
}
