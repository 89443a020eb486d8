package conctl

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

var logLevels = []string{"debug", "info", "warn", "error"}

func (a *app) logLevelCmd() *cobra.Command {
	var reset bool
	cmd := &cobra.Command{
		Use:   "log-level [debug|info|warn|error] [--reset]",
		Short: "Show or set the log level of every server replica at once",
		Long: `With no argument, log-level shows the log level set for the cluster, if any.
With a level, it sets it on every replica (the one that answers at once, the
others within a heartbeat, about 2 s), until it is set again; --reset
returns every replica to its own --log-level. Setting needs the admin role.`,
		Example: `  conctl log-level
  conctl log-level debug
  conctl log-level --reset`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case reset && len(args) > 0:
				return usagef("give a level or --reset, not both")
			case reset:
				return a.setLogLevel(cmd.Context(), "")
			case len(args) == 1:
				for _, l := range logLevels {
					if args[0] == l {
						return a.setLogLevel(cmd.Context(), l)
					}
				}
				return usagef("log level %q: use debug, info, warn or error", args[0])
			}
			return a.showLogLevel(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&reset, "reset", false, "return every replica to its own --log-level")
	return cmd
}

func (a *app) setLogLevel(ctx context.Context, level string) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.SetLogLevel(ctx, &convergev1.SetLogLevelRequest{Level: level})
	if err != nil {
		return wrapf(err, "setting the log level")
	}
	if a.machine() {
		return a.printMessages([]proto.Message{resp}, true)
	}
	prev := resp.GetPrevious()
	if prev == "" {
		prev = "each replica's --log-level"
	}
	if level == "" {
		_, err = fmt.Fprintf(a.stdout, "log level reset: each replica logs at its --log-level again (was %s)\n", prev)
	} else {
		_, err = fmt.Fprintf(a.stdout, "log level set to %s on every replica (was %s)\n", level, prev)
	}
	return err
}

func (a *app) showLogLevel(ctx context.Context) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.GetCluster(ctx, &convergev1.GetClusterRequest{})
	if err != nil {
		return wrapf(err, "reading the log level")
	}
	if a.machine() {
		return a.printMessages([]proto.Message{&convergev1.SetLogLevelResponse{Level: resp.GetLogLevel()}}, true)
	}
	if resp.GetLogLevel() == "" {
		_, err = fmt.Fprintln(a.stdout, "log level: not set for the cluster; each replica logs at its --log-level")
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "log level: %s (set by %s at %s)\n", resp.GetLogLevel(), resp.GetLogLevelSetBy(),
		resp.GetLogLevelSetAt().AsTime().UTC().Format(time.RFC3339))
	return err
}
