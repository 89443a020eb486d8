// Package conctl is the conctl command line: a kubectl-style client of a
// Converge server's control API. Run is the whole program; cmd/conctl only
// wires it to the process.
package conctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"github.com/convergehq/converge/sdk-go/client"
)

// Option configures Run.
type Option func(*app)

// WithStdio sets standard input, output and error (default: the process's).
func WithStdio(in io.Reader, out, errOut io.Writer) Option {
	return func(a *app) { a.stdin, a.stdout, a.stderr = in, out, errOut }
}

// WithGetenv sets how environment variables are read (default os.Getenv).
func WithGetenv(getenv func(string) string) Option {
	return func(a *app) { a.getenv = getenv }
}

// WithClock sets the clock used for AGE columns (default time.Now).
func WithClock(now func() time.Time) Option {
	return func(a *app) { a.now = now }
}

// WithTerminal says whether standard output is a terminal, where progress
// lines are rewritten in place (default: detected).
func WithTerminal(isTerminal bool) Option {
	return func(a *app) { a.terminal = &isTerminal }
}

// WithHTTPClient sets the HTTP client for server calls.
func WithHTTPClient(c connect.HTTPClient) Option {
	return func(a *app) { a.httpClient = c }
}

// Run executes conctl with args (without the program name) and returns the
// process exit code: 0 on success, 1 on any error, which it has printed as
// "error: <message>" on standard error.
func Run(ctx context.Context, args []string, opts ...Option) int {
	a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	for _, opt := range opts {
		opt(a)
	}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err != nil {
		a.printError(cmd, err)
		return 1
	}
	return 0
}

// app holds the process's I/O, the global flags and the client they make.
type app struct {
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer
	getenv     func(string) string
	now        func() time.Time
	terminal   *bool
	httpClient connect.HTTPClient

	server    string
	token     string
	namespace string
	output    string
	// requestTimeout bounds each call to the server (--request-timeout);
	// the commands that wait bound the whole wait with their own --timeout.
	requestTimeout time.Duration
	tls            tlsFlags

	client *client.Client
	// dryRun: the command's writes are sent as dry runs (--dry-run).
	dryRun bool
	// planID, set by apply --plan-id, fences every kind and resource apply
	// on that plan.
	planID string
}

// Output formats. Every command takes table, json and yaml; a command that
// takes others lists them all with withFormats.
const (
	formatTable = "table"
	formatWide  = "wide"
	formatJSON  = "json"
	formatYAML  = "yaml"
	formatDOT   = "dot"
)

// formatsAnnotation is the cobra annotation that holds a command's -o
// formats, comma-separated.
const formatsAnnotation = "conctl/output-formats"

// withFormats sets the -o formats cmd accepts.
func withFormats(cmd *cobra.Command, formats ...string) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[formatsAnnotation] = strings.Join(formats, ",")
	return cmd
}

// outputFormats is the -o formats cmd accepts.
func outputFormats(cmd *cobra.Command) []string {
	if f, ok := cmd.Annotations[formatsAnnotation]; ok {
		return strings.Split(f, ",")
	}
	return []string{formatTable, formatJSON, formatYAML}
}

// machine reports whether the output is for programs (JSON or YAML) rather
// than people.
func (a *app) machine() bool {
	return a.output == formatJSON || a.output == formatYAML
}

const serverEnv = "CONVERGE_SERVER"

// tokenEnv stands in for --token: a bearer token for a server that maps
// tokens to identities (converge serve --token-file). It is the same
// variable the SDKs and stdworker read.
const tokenEnv = client.EnvToken

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "conctl",
		Short: "Apply and inspect kinds and resources on a Converge server",
		Long: `conctl talks to a Converge server's control API.

Apply kinds (manifests), provider configs, reactor bindings and resources
from YAML or JSON files, watch them become Ready, and find out exactly what
broke when they do not. Operators can see a resource's history and roll it
back, quarantine it, force a reconcile, invoke its kind's operations and
tune a kind's policy live.`,
		Example: `  # Teach the server a kind, then create a resource of it and wait for it
  conctl apply -f greeting-kind.yaml -f hello.yaml --wait

  # What is failing anywhere?
  conctl list resources --phase Failed -A

  # Why?
  conctl describe resource greeting/hello-world

  # Which child of a composite is holding it back?
  conctl tree landingzone/acme

  # Follow changes as they happen
  conctl watch --kind greeting

  # What changed, and put it back
  conctl history greeting/hello-world
  conctl rollback greeting/hello-world --to 3 --reason "bad replica count"

  # Stop a poisoned resource from taking workers down
  conctl quarantine greeting/hello-world --reason "crashes its worker"`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		PersistentPreRunE: a.setup,
	}
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.HiddenDefaultCmd = true

	f := root.PersistentFlags()
	f.StringVar(&a.server, "server", client.DefaultBaseURL, "server base URL (env "+serverEnv+")")
	f.StringVarP(&a.namespace, "namespace", "n", client.DefaultNamespace, "namespace to work in")
	f.StringVarP(&a.output, "output", "o", formatTable, "output format: table, json or yaml (some commands also take wide or dot)")
	f.DurationVar(&a.requestTimeout, "request-timeout", 30*time.Second, "time limit for each call to the server (0: none); a command's --timeout bounds its --wait")
	f.StringVar(&a.tls.ca, "tls-ca", "", "verify an https:// server against these CAs (PEM; env "+tlsCAEnv+"; default: the system's)")
	f.StringVar(&a.tls.cert, "tls-cert", "", "client certificate for mutual TLS (PEM; env "+tlsCertEnv+")")
	f.StringVar(&a.tls.key, "tls-key", "", "private key of --tls-cert (PEM; env "+tlsKeyEnv+")")
	f.StringVar(&a.token, "token", "", "bearer token sent with every call, for a server started with --token-file (env "+tokenEnv+")")

	root.AddCommand(a.applyCmd(), a.getCmd(), a.listCmd(), a.describeCmd(), a.explainCmd(), a.tasksCmd(), a.treeCmd(), a.graphCmd(), a.logLevelCmd(),
		a.deleteCmd(), a.watchCmd(), a.eventsCmd(), a.historyCmd(), a.rollbackCmd(), a.quarantineCmd(),
		a.unquarantineCmd(), a.reconcileCmd(), a.opCmd(), a.kindCmd(), a.catalogCmd(), a.syncCmd(), a.renderCmd(), a.planCmd(), a.rolloutCmd(),
		a.importCmd(), a.manageCmd(), a.secretsCmd())
	return root
}

// setup checks the global flags and builds the client.
func (a *app) setup(cmd *cobra.Command, _ []string) error {
	if !cmd.Flags().Changed("server") {
		if env := a.getenv(serverEnv); env != "" {
			a.server = env
		}
	}
	u, err := url.Parse(a.server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError{fmt.Errorf("--server: %q is not an http(s) URL, e.g. %s", a.server, client.DefaultBaseURL)}
	}
	if formats := outputFormats(cmd); !slices.Contains(formats, a.output) {
		return usageError{fmt.Errorf("--output: %q is not one of %s", a.output, strings.Join(formats, ", "))}
	}
	if a.requestTimeout < 0 {
		return usageError{fmt.Errorf("--request-timeout: %s is negative", a.requestTimeout)}
	}
	if err := a.checkDryRun(cmd); err != nil {
		return err
	}
	if a.namespace == "" {
		return usageError{fmt.Errorf("--namespace: must not be empty (use -A where listing all namespaces is possible)")}
	}
	if a.terminal == nil {
		t := isTerminal(a.stdout)
		a.terminal = &t
	}
	a.tls.fromEnv(cmd.Flags().Changed, a.getenv)
	tlsClient, err := a.tls.httpClient(u)
	if err != nil {
		return err
	}
	var opts []client.Option
	switch {
	case a.httpClient != nil:
		opts = append(opts, client.WithHTTPClient(a.httpClient))
	case tlsClient != nil:
		opts = append(opts, client.WithHTTPClient(tlsClient))
	}
	if !cmd.Flags().Changed("token") {
		a.token = a.getenv(tokenEnv)
	}
	opts = append(opts, client.WithBearerToken(strings.TrimSpace(a.token)))
	opts = append(opts, client.WithConnectOptions(connect.WithInterceptors(dryRunInterceptor{a})))
	// An apply the server refuses for back-pressure waits as long as
	// --request-timeout allows, saying so: the server bounds how much
	// reconcile work may queue per kind (converge serve --max-backlog).
	opts = append(opts, client.WithBackpressure(client.DefaultBackpressureWait, func(_ string, wait time.Duration, refusal error) {
		fmt.Fprintf(a.stderr, "server busy, retrying in %s: %s\n", wait.Round(10*time.Millisecond), errMessage(refusal))
	}))
	a.client = client.New(strings.TrimRight(a.server, "/"), opts...)
	return nil
}

// call bounds one server call by --request-timeout.
func (a *app) call(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.requestTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, a.requestTimeout)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// errMessage is a connect error's message without its code prefix.
func errMessage(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}
