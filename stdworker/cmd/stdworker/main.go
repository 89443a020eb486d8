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
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := rootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "stdworker:", err)
		stop()
		os.Exit(1)
	}
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
                  (stdterraform) and std.graph@1 (stdcel), and the kinds that applied
                  std.graph resources define; apply the std kinds first with
                  "stdworker kinds apply". A std kind whose provider cannot start here
                  (say, no terraform binary) is logged and skipped, unless --kinds names it.
  --kinds         restricts either set to the kind versions listed.

The manifests of user kinds served by stdio must be applied to the server first
(conctl apply -f kind.yaml).`,
		Example: `  stdworker kinds apply
  stdworker
  stdworker --config stdworker.yaml --kinds backup@1 --parallelism 8
  stdworker --server https://converge.example.com --tls-ca ca.pem --tls-cert w.pem --tls-key w-key.pem`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serve(cmd.Context(), f)
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	f.register(cmd)
	cmd.AddCommand(kindsCmd(&f))
	return cmd
}
