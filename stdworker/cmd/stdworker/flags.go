package main

import (
	"cmp"
	"fmt"
	"log/slog"
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
	apiServer    string
	tokenFile    string
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
	pf.StringVar(&f.apiServer, "api-server", os.Getenv("CONVERGE_API_SERVER"), "control API base URL, where it differs from --server (a server split into control and broker roles; env CONVERGE_API_SERVER; default: --server)")
	pf.StringVar(&f.tokenFile, "token-file", os.Getenv("CONVERGE_TOKEN_FILE"), "file holding the bearer token sent with every call, for a server that identifies callers by token (env CONVERGE_TOKEN_FILE; default: the token in env CONVERGE_TOKEN, if any)")
	pf.StringVar(&f.tls.CA, "tls-ca", "", "PEM file of the CA that signs the server's certificate (https:// only; default: the system's roots)")
	pf.StringVar(&f.tls.Cert, "tls-cert", "", "PEM client certificate, for servers that authenticate workers by certificate (with --tls-key)")
	pf.StringVar(&f.tls.Key, "tls-key", "", "PEM key of --tls-cert")
	pf.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	pf.StringVar(&f.logFormat, "log-format", "text", "text or json")

	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "YAML file listing the kinds to serve, with provider, parallelism and settings (default: every std kind on the server)")
	fl.StringVar(&f.kinds, "kinds", "", "serve only these kind versions, as kind@version,... (e.g. std.shell@1,backup@1; default: all)")
	fl.IntVar(&f.parallelism, "parallelism", DefaultParallelism, "tasks run at once per kind version, unless the config file sets the kind's parallelism")
	// The default is computed when serve runs, not here: a default taken
	// from this machine's environment would show in --help and in the
	// generated reference as if it were everyone's.
	fl.StringVar(&f.stateDir, "state-dir", "", "directory providers keep files in across tasks and restarts, one subdirectory per kind version "+
		"(default: $XDG_STATE_HOME/converge-stdworker, else $HOME/.local/state/converge-stdworker, else converge-stdworker in the system's temporary directory)")
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

// apiURL is the control API's base URL.
func (f *flags) apiURL() string {
	return strings.TrimRight(cmp.Or(f.apiServer, f.server), "/")
}

// token is the bearer token to send: the --token-file's content, else
// $CONVERGE_TOKEN; "" sends none. Read it once, at start, and give it to
// every client, so that they all send the same one.
func (f *flags) token() (string, error) {
	if f.tokenFile == "" {
		return strings.TrimSpace(os.Getenv(client.EnvToken)), nil
	}
	b, err := os.ReadFile(f.tokenFile)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("--token-file %s: want one token, with no whitespace inside", f.tokenFile)
	}
	return tok, nil
}

// control returns a control API client that sends tok.
func (f *flags) control(tok string) (*client.Client, error) {
	hc, err := transport.Client(f.apiURL(), f.tls)
	if err != nil {
		return nil, err
	}
	opts := []client.Option{client.WithBearerToken(tok)}
	if hc != nil {
		opts = append(opts, client.WithHTTPClient(hc))
	}
	return client.New(f.apiURL(), opts...), nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// stateDir is the directory --state-dir names, or, when it is empty, the
// rule its help states: $XDG_STATE_HOME/converge-stdworker, else
// $HOME/.local/state/converge-stdworker, else converge-stdworker under tmp.
// getenv and home are parameters so that the rule is testable without
// touching the process environment.
func stateDir(flag string, getenv func(string) string, home func() (string, error), tmp string) string {
	if flag != "" {
		return flag
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "converge-stdworker")
	}
	if h, err := home(); err == nil && h != "" {
		return filepath.Join(h, ".local", "state", "converge-stdworker")
	}
	return filepath.Join(tmp, "converge-stdworker")
}
