package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/secret"
)

func devCmd() *cobra.Command {
	var flags serverFlags
	var databaseURL string
	var keep, durable bool
	var pgPort int
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run Converge locally with a throwaway PostgreSQL",
		Long: `Run every role in one process against a throwaway PostgreSQL cluster started from the
PostgreSQL server binaries on this machine (found on PATH, under /usr/lib/postgresql/*/bin, or in
CONVERGE_PG_BIN). When there are none and it runs as root on Debian or Ubuntu, it installs the
postgresql package with apt-get first (converge pg-bin does just that step); otherwise it names
the package to install. When run as root, PostgreSQL runs as the unprivileged "postgres" user.
Ctrl-C stops everything and removes the cluster's data directory, unless --keep.

It listens on loopback (127.0.0.1:7070) and, without authorization flags, lets every caller do
everything, and says so; like serve, it refuses a --listen beyond loopback without authorization
unless --allow-anonymous. Without --secret-key-file or CONVERGE_SECRET_KEY it generates a
throwaway key for secret values in the cluster's data directory (with --database-url, in the
user's config directory), and says so.`,
		Example: `  converge dev
  converge dev --listen 127.0.0.1:8080 --keep
  converge dev --database-url postgres://postgres@localhost:5432/converge`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var cluster *devpg.Cluster
			if databaseURL == "" {
				bin, err := devpg.FindOrInstall(ctx, os.Stderr)
				if err != nil {
					return err
				}
				fmt.Fprintln(os.Stderr, "starting a throwaway PostgreSQL...")
				cluster, err = devpg.Start(ctx, devpg.Options{BinDir: bin, Port: pgPort, Keep: keep, Durable: durable})
				if err != nil {
					return err
				}
				defer func() {
					if err := cluster.Stop(); err != nil {
						fmt.Fprintln(os.Stderr, "stopping PostgreSQL:", err)
					}
					if keep {
						fmt.Fprintln(os.Stderr, "kept the PostgreSQL data directory:", cluster.Dir())
					}
				}()
				if err := createDatabase(ctx, cluster); err != nil {
					return err
				}
				databaseURL = cluster.URL("converge")
			}
			cfg, err := flags.config(databaseURL)
			if err != nil {
				return err
			}
			cfg.Role, cfg.Migrate = app.RoleAll, true
			if len(cfg.SecretKeys) == 0 {
				if cfg.SecretKeys, err = devSecretKey(cluster); err != nil {
					return err
				}
			}
			if err := checkOpenAccess(cfg.Listen, cfg.Role, cfg.Authz, cfg.TLS, flags.authz.allowAnonymous); err != nil {
				return err
			}
			a, err := app.Start(ctx, cfg)
			if err != nil {
				return err
			}
			scheme := "http://"
			if cfg.TLS.Enabled() {
				scheme = "https://"
			}
			url := scheme + a.Addr().String()
			fmt.Fprintf(os.Stderr, "\nConverge is running.\n  API:       %s   (REST under %s/api/v1, OpenAPI at %s/openapi.json)\n  Workers:   %s\n  Database:  %s\n\nTry:\n  export CONVERGE_SERVER=%s\n  go run ./server/cmd/conctl apply -f sdk-go/examples/leaf/greeting.yaml\n\nPress Ctrl-C to stop.\n\n",
				url, url, url, url, databaseURL, url)
			if !cfg.Authz.Enabled() {
				fmt.Fprintf(os.Stderr, "Authorization is off (dev mode): every caller may do everything. Fine on loopback; see docs/operations.md before exposing a server.\n\n")
			}
			if m := a.MetricsAddr(); m != nil {
				fmt.Fprintf(os.Stderr, "Metrics:   http://%s/metrics\n\n", m)
			}
			select {
			case <-ctx.Done():
			case <-a.Done():
			}
			return a.Stop()
		},
	}
	flags.register(cmd, "127.0.0.1:7070")
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "use this existing database instead of a throwaway one")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the throwaway cluster's data directory on exit")
	cmd.Flags().BoolVar(&durable, "durable", false, "run the throwaway cluster with fsync and synchronous commit on")
	cmd.Flags().IntVar(&pgPort, "pg-port", 0, "port of the throwaway PostgreSQL (default: a free port)")
	return cmd
}

func createDatabase(ctx context.Context, c *devpg.Cluster) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.CreateDatabase(ctx, "converge", "")
}

// devSecretKey returns a throwaway key-encryption key for secret values,
// kept in the throwaway cluster's data directory (or, over an existing
// database, in the user's config directory, so that a second dev run can
// open what the first sealed), creating it on first use, and says so.
func devSecretKey(cluster *devpg.Cluster) ([]secret.Key, error) {
	var dir string
	if cluster != nil {
		dir = cluster.Dir()
	} else {
		base, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("a dev secret key needs a directory: %w (or give --secret-key-file)", err)
		}
		dir = filepath.Join(base, "converge")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(dir, "dev-secret.key")
	keys, created, err := secret.EnsureKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("dev secret key %s: %w", path, err)
	}
	verb := "using"
	if created {
		verb = "generated"
	}
	fmt.Fprintf(os.Stderr, "secret values: %s a throwaway key in %s (dev only; production servers take --secret-key-file)\n", verb, path)
	return keys, nil
}
