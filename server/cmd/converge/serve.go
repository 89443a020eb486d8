package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/admission"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/maintenance"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

// serverFlags are the flags serve and dev share.
type serverFlags struct {
	listen        string
	role          string
	poolSize      int32
	lease         time.Duration
	heartbeat     time.Duration
	poll          time.Duration
	retryBase     time.Duration
	retryMax      time.Duration
	changeRetain  time.Duration
	notifyBudget  float64
	logLevel      string
	logFormat     string
	pprofListen   string
	metricsListen string
	historyKeep   int
	taskRecords   int
	maxBacklog    int64
	maxQueueWait  time.Duration
	recordBytes   int
	tls           tlsconf.Config
	authz         authzFlags
	clients       app.ClientLimits
	secretKeys    string
}

// authzFlags map API callers to roles and teams.
type authzFlags struct {
	adminIDs, writerIDs, readerIDs []string
	teams, grants                  []string
	tokenFile                      string
	// allowAnonymous accepts a server beyond loopback without rules.
	allowAnonymous bool
}

func (f *authzFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringSliceVar(&f.adminIDs, "admin-ids", nil, "identities (SPIFFE IDs, trailing /* for a prefix) that may do everything, comma-separated")
	fs.StringSliceVar(&f.writerIDs, "writer-ids", nil, "identities that may apply and delete resources and run operator actions on them, comma-separated")
	fs.StringSliceVar(&f.readerIDs, "reader-ids", nil, "identities that may read, comma-separated")
	fs.StringArrayVar(&f.teams, "team", nil, "team membership TEAM=PATTERN[,PATTERN] (repeatable); a kind's owner team may change its manifest, configs, reactor bindings and policy, and write and read its resources in every namespace; a team also owns the owner names below its own (team std.graph owns std.graph/NS/NAME)")
	fs.StringArrayVar(&f.grants, "grant", nil, "a role in some namespaces ROLE:NAMESPACES=IDENTITIES (repeatable): ROLE reader or writer; NAMESPACES comma-separated names or prefixes ending in * (team-a-*); IDENTITIES comma-separated identity patterns or team:NAME; e.g. writer:team-a-*=team:team-a")
	fs.StringVar(&f.tokenFile, "token-file", "", "map bearer tokens to identities, one \"TOKEN IDENTITY\" per line (read at start)")
	fs.BoolVar(&f.allowAnonymous, "allow-anonymous", false, "serve beyond loopback without any authorization flag, letting every API caller do everything and any process connect as a worker (refused otherwise)")
}

// policy builds the authorization policy. With none of the flags set it
// has no rules, and every caller may do everything.
func (f *authzFlags) policy() (*authz.Policy, error) {
	opts := []authz.Option{}
	for role, ids := range map[string][]string{authz.RoleAdmin: f.adminIDs, authz.RoleWriter: f.writerIDs, authz.RoleReader: f.readerIDs} {
		if len(ids) > 0 {
			opts = append(opts, authz.WithRole(role, ids...))
		}
	}
	for _, t := range f.teams {
		o, err := authz.ParseTeam(t)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	for _, g := range f.grants {
		o, err := authz.ParseGrant(g)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	if f.tokenFile != "" {
		o, err := authz.LoadTokens(f.tokenFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, o)
	}
	return authz.New(opts...)
}

func (f *serverFlags) register(cmd *cobra.Command, defaultListen string) {
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", defaultListen, "address of the API and worker listener")
	fs.Int32Var(&f.poolSize, "pool-size", 16, "database connections for requests")
	fs.DurationVar(&f.lease, "lease", 30*time.Second, "how long a task survives without a worker attesting it; a dead worker's tasks run again after it")
	fs.DurationVar(&f.heartbeat, "heartbeat", 5*time.Second, "how often workers attest running tasks (must be well under --lease)")
	fs.DurationVar(&f.poll, "poll", time.Second, "failsafe: check the queue this often even without a wake-up")
	fs.DurationVar(&f.retryBase, "retry-base", time.Second, "first retry delay after a transient failure (doubles per attempt, with jitter)")
	fs.DurationVar(&f.retryMax, "retry-max", 5*time.Minute, "longest retry delay after transient failures")
	fs.DurationVar(&f.changeRetain, "change-retention", time.Hour, "how long the change feed behind Watch keeps entries")
	fs.Float64Var(&f.notifyBudget, "notify-budget", app.DefaultNotifyBudget, "cross-replica wake-ups (PostgreSQL NOTIFY) per second for the whole cluster, shared equally among the live replicas")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error; an admin can change every replica's level while it runs (conctl log-level)")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.StringVar(&f.pprofListen, "pprof-listen", "", "serve Go's pprof profiles on this address (e.g. 127.0.0.1:6060); off by default")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics at /metrics on this address, plaintext and apart from the API (e.g. :9090); off by default")
	fs.IntVar(&f.historyKeep, "history-keep", store.DefaultHistoryKeep, "spec revisions kept per resource for history and rollback (1..1000)")
	fs.Int64Var(&f.maxBacklog, "max-backlog", admission.DefaultBound, "admission ceiling: an apply to a kind with this many reconciles waiting for a worker is refused (ResourceExhausted, HTTP 429) with a retry hint, which conctl and the Go client follow; 0 admits everything")
	fs.DurationVar(&f.maxQueueWait, "max-queue-wait", admission.DefaultMaxWait, "admission target: below --max-backlog, a kind's bound is what it drains in this long at its current rate (never under 1,000), so an accepted apply waits about this long for a worker; 0: --max-backlog alone")
	fs.IntVar(&f.taskRecords, "task-records", taskrec.DefaultKeep, "task records kept per resource: what each task was sent and returned, and what became of it (0..1000; 0 keeps none)")
	fs.IntVar(&f.recordBytes, "task-record-bytes", taskrec.DefaultMaxBytes, "byte budget of one task record's input and result; larger parts are cut")
	fs.StringVar(&f.secretKeys, "secret-key-file", "", "key-encryption keys of secret values (base64 of 32 random bytes each, one a line, the current first; converge keygen makes one); default $"+secret.EnvVar+"; without either, kinds with secret properties are refused")
	fs.StringVar(&f.tls.CertFile, "tls-cert", "", "serve TLS with this certificate chain (PEM; re-read when it changes)")
	fs.StringVar(&f.tls.KeyFile, "tls-key", "", "private key of --tls-cert (PEM; re-read when it changes)")
	fs.StringVar(&f.tls.ClientCAFile, "tls-client-ca", "", "verify client certificates against these CAs (PEM): mutual TLS")
	fs.StringVar(&f.tls.ClientAuth, "tls-client-auth", tlsconf.ClientAuthRequire, "with --tls-client-ca: require a client certificate on every connection, or request one (connections without one reach only paths whose allowlist is empty, and /healthz, /readyz)")
	fs.StringSliceVar(&f.tls.AllowAPIIDs, "allow-api-ids", nil, "SPIFFE IDs allowed to call the control API, comma-separated; a trailing /* admits a prefix (default: any verified client)")
	fs.StringSliceVar(&f.tls.AllowWorkerIDs, "allow-worker-ids", nil, "SPIFFE IDs allowed to connect as workers, comma-separated; a trailing /* admits a prefix (default: any verified client)")
	fs.DurationVar(&f.clients.HeaderTimeout, "header-timeout", app.DefaultHeaderTimeout, "close a connection whose request headers take longer than this to arrive")
	fs.DurationVar(&f.clients.BodyTimeout, "body-timeout", app.DefaultBodyTimeout, "answer 408 and close when an API request body takes longer than this to arrive after its headers")
	fs.DurationVar(&f.clients.IdleTimeout, "idle-timeout", app.DefaultIdleTimeout, "close a keep-alive connection idle this long")
	fs.IntVar(&f.clients.MaxConns, "max-conns", app.DefaultMaxConns, "most open connections in total; more are refused with 503")
	fs.IntVar(&f.clients.MaxConnsPerClient, "max-conns-per-client", app.DefaultMaxConnsPerClient, "most open connections from one client IP address; more are refused with 429")
	f.authz.register(cmd)
}

func (f *serverFlags) config(databaseURL string) (app.Config, error) {
	log, level, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return app.Config{}, err
	}
	if f.historyKeep < 1 || f.historyKeep > 1000 {
		return app.Config{}, fmt.Errorf("--history-keep %d: must be between 1 and 1000", f.historyKeep)
	}
	if f.maxBacklog < 0 || f.maxQueueWait < 0 {
		return app.Config{}, fmt.Errorf("--max-backlog %d, --max-queue-wait %s: must not be negative (0 turns each off)", f.maxBacklog, f.maxQueueWait)
	}
	if f.taskRecords < 0 || f.taskRecords > 1000 {
		return app.Config{}, fmt.Errorf("--task-records %d: must be between 0 (off) and 1000", f.taskRecords)
	}
	if f.recordBytes < taskrec.MinMaxBytes || f.recordBytes > 16<<20 {
		return app.Config{}, fmt.Errorf("--task-record-bytes %d: must be between %d and %d", f.recordBytes, taskrec.MinMaxBytes, 16<<20)
	}
	if !(f.notifyBudget >= 1 && f.notifyBudget <= 10000) {
		return app.Config{}, fmt.Errorf("--notify-budget %g: must be between 1 and 10000 per second", f.notifyBudget)
	}
	if f.heartbeat*3 > f.lease {
		return app.Config{}, errors.New("--heartbeat must be at most a third of --lease, so one lost heartbeat does not cost a lease")
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--header-timeout", f.clients.HeaderTimeout}, {"--body-timeout", f.clients.BodyTimeout}, {"--idle-timeout", f.clients.IdleTimeout}} {
		if d.v <= 0 {
			return app.Config{}, fmt.Errorf("%s %s: must be positive", d.flag, d.v)
		}
	}
	if f.clients.MaxConns < 1 || f.clients.MaxConnsPerClient < 1 || f.clients.MaxConnsPerClient > f.clients.MaxConns {
		return app.Config{}, fmt.Errorf("--max-conns %d, --max-conns-per-client %d: both must be at least 1, the second at most the first",
			f.clients.MaxConns, f.clients.MaxConnsPerClient)
	}
	policy, err := f.authz.policy()
	if err != nil {
		return app.Config{}, err
	}
	keys, _, err := secret.LoadKeys(f.secretKeys)
	if err != nil {
		return app.Config{}, err
	}
	return app.Config{
		DatabaseURL: databaseURL,
		Listen:      f.listen,
		Role:        f.role,
		PoolSize:    f.poolSize,
		Broker: broker.Config{
			Lease: f.lease, HeartbeatInterval: f.heartbeat, PollInterval: f.poll,
			Backoff: store.Backoff{Base: f.retryBase, Max: f.retryMax},
		},
		Maintenance:   maintenance.Config{ChangeRetention: f.changeRetain},
		NotifyBudget:  f.notifyBudget,
		PprofListen:   f.pprofListen,
		MetricsListen: f.metricsListen,
		HistoryKeep:   f.historyKeep,
		MaxBacklog:    f.maxBacklog,
		MaxQueueWait:  f.maxQueueWait,
		TaskRecords:   taskrec.Config{Keep: f.taskRecords, MaxBytes: f.recordBytes},
		TLS:           f.tls,
		Authz:         policy,
		SecretKeys:    keys,
		Clients:       f.clients,
		Version:       version,
		Log:           log,
		LogLevel:      level,
	}, nil
}

func serveCmd() *cobra.Command {
	var flags serverFlags
	var reads readFlags
	var databaseURL string
	var migrate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a Converge server against a PostgreSQL database",
		Long: `Run a Converge server. Any number of replicas may run against one database.

Roles:
  all      the API, the maintenance duties and the broker (default)
  control  the API (Connect, gRPC, gRPC-Web and REST under /api/v1) and the
           maintenance duties (requeueing expired or abandoned leases, deleting
           orphans, queueing resyncs, trimming the change feed)
  broker   the worker endpoint: claims tasks, pushes them to workers, applies results

Authorization: without any of --admin-ids, --writer-ids, --reader-ids, --team,
--grant or --token-file, every API caller may do everything; serve refuses that
when --listen reaches beyond loopback (e.g. the default :7070) unless
--allow-anonymous says so explicitly. With any of them, callers are identified
by their verified SPIFFE ID (mTLS) or bearer token (--token-file) and each
request needs a role. Global roles cover every namespace; --grant gives reader
or writer in some namespaces only, and a caller without a global role sees only
the namespaces it is granted (and its teams' kinds). Resource writes need
writer, admin, a writer grant on the namespace or the kind's owner team; reading
one resource of a namespace the caller may not read is refused (403); kind manifests,
provider configs, reactor bindings and policies need admin or the kind's owner
team (see docs/operations.md). Workers are identified the same way: while
authorization is on, a worker needs a client certificate or a token from
--token-file, and its identity is checked against the kinds' workers lists; a
broker-only server beyond loopback needs --token-file, required client
certificates or --allow-anonymous.

Read replica: --read-database-url sends the API's reads to a PostgreSQL
streaming replica of --database-url. A read goes to the primary instead
while the replica is unreachable, not in recovery, or further behind than
--read-max-lag. Every write is answered with a token (response header
Converge-Read-After); a read that sends it back waits up to --read-wait for
the replica to replay that write, else reads the primary. The Go client and
conctl send it back by themselves (see docs/production.md).`,
		Example: `  converge serve --database-url postgres://converge@db:5432/converge
  CONVERGE_DATABASE_URL=postgres://... converge serve --role broker --listen :7071
  converge serve --database-url ... --tls-cert tls.crt --tls-key tls.key --tls-client-ca ca.crt \
    --allow-api-ids 'spiffe://example.org/ns/ops/*' --allow-worker-ids 'spiffe://example.org/ns/workers/*' \
    --admin-ids spiffe://example.org/ns/ops/admin --writer-ids 'spiffe://example.org/ns/ci/*' \
    --reader-ids 'spiffe://example.org/ns/ops/*' --team 'data-platform=spiffe://example.org/ns/data/*' \
    --team 'team-a=spiffe://example.org/ns/team-a/*' --grant 'writer:team-a-*=team:team-a'`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if databaseURL == "" {
				databaseURL = os.Getenv("CONVERGE_DATABASE_URL")
			}
			if databaseURL == "" {
				return errors.New("--database-url (or CONVERGE_DATABASE_URL) is required; for a throwaway local setup run `converge dev`")
			}
			cfg, err := flags.config(databaseURL)
			if err != nil {
				return err
			}
			if err := reads.apply(cmd, &cfg); err != nil {
				return err
			}
			if err := checkOpenAccess(cfg.Listen, cfg.Role, cfg.Authz, cfg.TLS, flags.authz.allowAnonymous); err != nil {
				return err
			}
			cfg.Migrate = migrate
			a, err := app.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			select {
			case <-cmd.Context().Done():
			case <-a.Done():
			}
			return a.Stop()
		},
	}
	flags.register(cmd, ":7070")
	cmd.Flags().StringVar(&flags.role, "role", app.RoleAll, "all, control or broker")
	cmd.Flags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (env CONVERGE_DATABASE_URL)")
	cmd.Flags().BoolVar(&migrate, "migrate", true, "apply pending migrations at start (safe with several replicas)")
	reads.register(cmd)
	return cmd
}
