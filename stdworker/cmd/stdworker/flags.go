package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/stdworker/internal/transport"
)

// DefaultParallelism is each kind's parallelism unless the configuration
// file or --parallelism says otherwise.
const DefaultParallelism = 8

type flags struct {
	server       string
	tls          transport.TLSFiles
	config       string
	kinds        string
	parallelism  int
	stateDir     string
	drainTimeout time.Duration
	logLevel     string
	logFormat    string
}

func (f *flags) register(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.server, "server", envOr("CONVERGE_SERVER", client.DefaultBaseURL), "server base URL (env CONVERGE_SERVER)")
	pf.StringVar(&f.tls.CA, "tls-ca", "", "PEM file of the CA that signs the server's certificate (https:// only; default: the system's roots)")
	pf.StringVar(&f.tls.Cert, "tls-cert", "", "PEM client certificate, for servers that authenticate workers by certificate (with --tls-key)")
	pf.StringVar(&f.tls.Key, "tls-key", "", "PEM key of --tls-cert")
	pf.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	pf.StringVar(&f.logFormat, "log-format", "text", "text or json")

	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "YAML file listing the kinds to serve, with provider, parallelism and settings (default: every std kind on the server)")
	fl.StringVar(&f.kinds, "kinds", "", "serve only these kind versions, as kind@version,... (e.g. std.shell@1,backup@1; default: all)")
	fl.IntVar(&f.parallelism, "parallelism", DefaultParallelism, "tasks run at once per kind version, unless the config file sets the kind's parallelism")
	fl.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "directory providers keep files in across tasks and restarts, one subdirectory per kind version")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "on SIGTERM/SIGINT, how long running tasks may take to finish before their programs are killed")
}

// logger builds the logger the flags ask for.
func (f *flags) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not debug, info, warn or error", f.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: %q is not text or json", f.logFormat)
}

// control returns a control API client, and the HTTP client it and the
// workers use (nil: the defaults).
func (f *flags) control() (*client.Client, *http.Client, error) {
	hc, err := transport.Client(f.server, f.tls)
	if err != nil {
		return nil, nil, err
	}
	var opts []client.Option
	if hc != nil {
		opts = append(opts, client.WithHTTPClient(hc))
	}
	return client.New(strings.TrimRight(f.server, "/"), opts...), hc, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// defaultStateDir is $XDG_STATE_HOME/converge-stdworker, else
// ~/.local/state/converge-stdworker, else one under the temporary directory.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "converge-stdworker")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "converge-stdworker")
	}
	return filepath.Join(os.TempDir(), "converge-stdworker")
}
