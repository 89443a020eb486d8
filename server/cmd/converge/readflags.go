package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/readroute"
)

// readFlags point the API's reads at a streaming replica.
type readFlags struct {
	url    string
	maxLag time.Duration
	wait   time.Duration
}

func (f *readFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.url, "read-database-url", "", "PostgreSQL URL of a streaming replica (hot standby) of --database-url that serves the API's reads: get, list, counts, Watch, history, events, operations, rollouts (env CONVERGE_READ_DATABASE_URL); writes and the engine stay on the primary")
	fs.DurationVar(&f.maxLag, "read-max-lag", readroute.DefaultMaxLag, "with --read-database-url: reads go to the primary while the replica is further behind than this")
	fs.DurationVar(&f.wait, "read-wait", readroute.DefaultWait, "with --read-database-url: how long a read carrying a read-your-writes token waits for the replica to replay that write before it goes to the primary")
}

// apply checks the flags and sets them on cfg.
func (f *readFlags) apply(cmd *cobra.Command, cfg *app.Config) error {
	if f.url == "" {
		f.url = os.Getenv("CONVERGE_READ_DATABASE_URL")
	}
	if f.url == "" {
		for _, name := range []string{"read-max-lag", "read-wait"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s: only with --read-database-url (or CONVERGE_READ_DATABASE_URL)", name)
			}
		}
		return nil
	}
	if f.url == cfg.DatabaseURL {
		return errors.New("--read-database-url: names the --database-url itself; give a streaming replica of it, or leave it out")
	}
	if f.maxLag < readroute.MinMaxLag || f.maxLag > time.Hour {
		return fmt.Errorf("--read-max-lag %s: must be between %s (the lag is sampled that finely) and 1h", f.maxLag, readroute.MinMaxLag)
	}
	if f.wait <= 0 || f.wait > time.Minute {
		return fmt.Errorf("--read-wait %s: must be positive and at most 1m", f.wait)
	}
	cfg.ReadDatabaseURL, cfg.ReadMaxLag, cfg.ReadWait = f.url, f.maxLag, f.wait
	return nil
}
