// Package app assembles a Converge server from its parts for the roles it
// runs: control (API and maintenance duties), broker (worker streams,
// claiming and result application), or both.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/admission"
	"github.com/convergehq/converge/server/internal/api"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/connlimit"
	"github.com/convergehq/converge/server/internal/graph"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/maintenance"
	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/migrate"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/reactor"
	"github.com/convergehq/converge/server/internal/readroute"
	"github.com/convergehq/converge/server/internal/rollout"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/service"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

// DefaultNotifyBudget is the cluster's NOTIFYs per second unless
// configured: each notifying commit takes a cluster-wide lock, and 50 a
// second costs PostgreSQL nothing measurable, yet keeps a busy replica's
// peers woken within 20 ms while two replicas share it.
const DefaultNotifyBudget = 50

// Roles a process can run.
const (
	RoleAll     = "all"
	RoleControl = "control"
	RoleBroker  = "broker"
)

// Config configures a server process.
type Config struct {
	DatabaseURL string
	// ReadDatabaseURL, if set, is a streaming replica of DatabaseURL that
	// serves the API's reads (package readroute); ReadMaxLag and ReadWait
	// bound its staleness and how long a read waits for it to catch up
	// with the caller's last write (0: readroute's defaults).
	ReadDatabaseURL string
	ReadMaxLag      time.Duration
	ReadWait        time.Duration
	// Listen is the address of the API and worker listener.
	Listen string
	// Role is all, control or broker.
	Role string
	// Migrate applies pending migrations at start.
	Migrate bool
	// PoolSize is the number of database connections for requests.
	PoolSize int32
	// NotifyBudget is how many NOTIFYs a second the replicas may send
	// together (each sends its equal share).
	NotifyBudget float64
	Broker       broker.Config
	// Maintenance tunes the control role's background duties.
	Maintenance maintenance.Config
	// PprofListen, if set, serves Go's pprof profiles on that address.
	PprofListen string
	// MetricsListen, if set, serves Prometheus metrics at /metrics on that
	// address, in plaintext and apart from the API listener.
	MetricsListen string
	// HistoryKeep is how many spec revisions per resource are kept
	// (1..1000; 0 means store.DefaultHistoryKeep).
	HistoryKeep int
	// MaxBacklog is the admission bound: applies to a kind with this many
	// reconciles waiting for a worker are refused with a retry hint (0:
	// no bound).
	MaxBacklog int64
	// MaxQueueWait lowers that bound to what a kind drains in this long
	// at the rate it drains now (0: MaxBacklog alone).
	MaxQueueWait time.Duration
	// TaskRecords bounds the task records a broker keeps; Keep 0 keeps
	// none.
	TaskRecords taskrec.Config
	// TLS, if enabled, serves the listener over TLS (mutual with a client
	// CA) and admits callers by SPIFFE ID per audience.
	TLS tlsconf.Config
	// Clients bounds what one client can hold of the API listener.
	Clients ClientLimits
	// Authz maps API callers to roles and teams and decides each request;
	// nil (or a policy without rules) allows every request.
	Authz   *authz.Policy
	Version string
	Log     *slog.Logger
	// SecretKeys are the key-encryption keys of secret values, the
	// current one first (see secret.LoadKeys); none means secrets are
	// refused, and a database holding any refuses the start.
	SecretKeys []secret.Key
	// RotateInterval is how often the control role looks for values
	// sealed by a retired key (0: 30s).
	RotateInterval time.Duration
	// LogLevel, if set, is the level Log's handler reads: the replica then
	// follows the cluster's log level (SetLogLevel), its value at start
	// being the level it returns to on a reset.
	LogLevel *slog.LevelVar
}

// App is a running server.
type App struct {
	cfg      Config
	addr     net.Addr
	server   *http.Server
	pools    []*pgxpool.Pool
	done     chan struct{}
	stop     context.CancelFunc
	services *service.Group
	errMu    sync.Mutex
	err      error
	memberID string
	members  *members.Tracker
	// metricsAddr is the bound metrics listener; nil when metrics are off.
	metricsAddr net.Addr
}

// Start connects, migrates if asked, and starts serving. It returns once
// the listener is bound.
func Start(ctx context.Context, cfg Config) (*App, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	control, brokerRole, err := roles(cfg.Role)
	if err != nil {
		return nil, err
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = 16
	}
	if cfg.NotifyBudget <= 0 {
		cfg.NotifyBudget = DefaultNotifyBudget
	}
	if cfg.HistoryKeep == 0 {
		cfg.HistoryKeep = store.DefaultHistoryKeep
	}
	if cfg.HistoryKeep < 1 || cfg.HistoryKeep > 1000 {
		return nil, fmt.Errorf("--history-keep %d: must be between 1 and 1000", cfg.HistoryKeep)
	}
	var tc *tlsconf.Server
	if cfg.TLS.Enabled() {
		if tc, err = tlsconf.New(cfg.TLS, cfg.Log); err != nil {
			return nil, err
		}
	}
	if control && !cfg.Authz.Enabled() {
		cfg.Log.Warn("authorization is off: every API caller may do everything (set --admin-ids, --writer-ids, --reader-ids, --team, --grant or --token-file)")
	}
	if cfg.Migrate {
		steps, err := migrate.Up(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, fmt.Errorf("migrating the database: %w", err)
		}
		for _, s := range steps {
			cfg.Log.Info("applied migration", "version", s.Version, "file", s.File)
		}
	}
	pool, err := openPool(ctx, cfg.DatabaseURL, cfg.PoolSize, cfg.HistoryKeep, false)
	if err != nil {
		return nil, err
	}
	relaxed, err := openPool(ctx, cfg.DatabaseURL, 4, cfg.HistoryKeep, true)
	if err != nil {
		pool.Close()
		return nil, err
	}
	a := &App{cfg: cfg, pools: []*pgxpool.Pool{pool, relaxed}, done: make(chan struct{}), memberID: memberID()}
	st := store.New(pool, relaxed)
	bus := notify.New(pool, a.memberID, cfg.NotifyBudget, cfg.Log)
	reg := kinds.New(st, bus, cfg.Log)
	if err := reg.Refresh(ctx); err != nil {
		a.closePools()
		return nil, fmt.Errorf("loading kinds: %w", err)
	}
	keys, err := openSecrets(ctx, st, reg, cfg)
	if err != nil {
		a.closePools()
		return nil, err
	}

	var m *metrics.Metrics
	if cfg.MetricsListen != "" {
		m = metrics.New()
	}
	var b *broker.Broker
	var rec *taskrec.Recorder
	var tracker *members.Tracker // set below; it needs the broker's Served
	if brokerRole {
		bc := cfg.Broker
		bc.MemberID = a.memberID
		bc.Metrics = m
		rec = taskrec.New(cfg.TaskRecords, st, cfg.Log)
		bc.Records = rec
		bc.Authz = cfg.Authz
		bc.Tile = func(kind string, version int32) (lo, hi int16) {
			if tracker == nil {
				return 0, store.Shards
			}
			return tracker.Tile(kind, version)
		}
		b = broker.New(bc, st, reg, bus, cfg.Log)
	}
	var served func() []store.Served
	if b != nil {
		served = b.Served
	}
	host, _ := os.Hostname()
	tracker = members.New(st, bus, store.Member{
		ID: a.memberID, Roles: roleList(control, brokerRole), Hostname: host, PID: os.Getpid(), Version: cfg.Version,
	}, served, cfg.Log)
	tracker.Refresh(ctx)
	a.members = tracker
	if b != nil {
		b.OnServedChange(tracker.Changed)
	}

	var levels *logLevel
	if cfg.LogLevel != nil {
		levels = newLogLevel(st, cfg.LogLevel, cfg.Log)
	}
	var svc *api.Service
	var reads *readroute.Router
	if control {
		svc = api.New(st, reg, bus, tracker, cfg.Log)
		if cfg.MaxBacklog > 0 {
			gate := admission.New(cfg.MaxBacklog, cfg.MaxQueueWait, st.Backlog)
			gate.OnRefuse = m.Refused
			svc.Admit(gate)
		}
		if levels != nil {
			svc.OnLogLevel(levels.sync)
		}
		if cfg.ReadDatabaseURL != "" {
			replica, err := openReplicaPool(cfg.ReadDatabaseURL, cfg.PoolSize, cfg.HistoryKeep)
			if err != nil {
				a.closePools()
				return nil, err
			}
			a.pools = append(a.pools, replica)
			reads = readroute.New(readroute.Config{Primary: pool, Replica: replica, MaxLag: cfg.ReadMaxLag, Wait: cfg.ReadWait, Log: cfg.Log})
			svc.RouteReads(reads)
		}
	}
	cfg.Clients = cfg.Clients.withDefaults()
	handler, err := newHandler(svc, b, pool, tc, m, cfg.Authz, cfg.Clients, cfg.Log)
	if err != nil {
		a.closePools()
		return nil, err
	}
	if m != nil {
		if err := watchAll(m, st, pool, relaxed, b, rec, bus, reads, cfg.Log); err != nil {
			a.closePools()
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		a.closePools()
		return nil, fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	a.addr = ln.Addr()
	ln = connlimit.Wrap(ln, connlimit.Limits{Total: cfg.Clients.MaxConns, PerClient: cfg.Clients.MaxConnsPerClient})
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	if tc != nil {
		// HTTP/2 and HTTP/1.1 by ALPN; h2c cannot happen inside TLS.
		protocols.SetHTTP2(true)
		protocols.SetUnencryptedHTTP2(false)
	}
	a.server = &http.Server{Handler: handler, Protocols: &protocols,
		ReadHeaderTimeout: cfg.Clients.HeaderTimeout, IdleTimeout: cfg.Clients.IdleTimeout}
	if tc != nil {
		a.server.TLSConfig = tc.TLSConfig()
		// Failed handshakes (unknown CA, expired or missing client
		// certificates) are the operator's to see, in the structured log.
		a.server.ErrorLog = slog.NewLogLogger(cfg.Log.Handler(), slog.LevelWarn)
	}

	duties, err := a.duties(svc, st, reg, bus, tracker, b, m, pool)
	if keys != nil && svc != nil {
		rot := secret.NewRotator(keys, st, cfg.RotateInterval, cfg.Log)
		duties = append(duties, rot)
		if m != nil {
			if err := m.WatchSecrets(rot.Stale, rot.Resealed); err != nil {
				ln.Close()
				a.closePools()
				return nil, fmt.Errorf("registering metrics: %w", err)
			}
		}
	}
	if levels != nil {
		duties = append(duties, levels)
	}
	if reads != nil {
		duties = append(duties, reads)
	}
	if rec != nil {
		duties = append(duties, rec)
	}
	if err != nil {
		ln.Close()
		a.closePools()
		return nil, err
	}
	a.services = service.Start(context.Background(), cfg.Log, duties...)
	stopping, stop := context.WithCancel(context.Background())
	a.stop = stop
	serveErr := make(chan error, 1)
	go func() {
		if tc != nil {
			serveErr <- a.server.ServeTLS(ln, "", "")
			return
		}
		serveErr <- a.server.Serve(ln)
	}()
	go func() {
		select {
		case err := <-serveErr:
			if !errors.Is(err, http.ErrServerClosed) {
				a.setErr(err)
			}
		case <-stopping.Done():
		}
		a.shutdown()
	}()
	cfg.Log.Info("converge serving", "addr", a.addr.String(), "role", cfg.Role, "member", a.memberID)
	return a, nil
}

// duties lists the background services of the roles this process runs,
// in the order they start; they stop in the reverse order, so the bus,
// the kinds registry and the member row outlive everything that uses
// them. The side listeners are bound here, so a taken address fails the
// start.
func (a *App) duties(svc *api.Service, st *store.Store, reg *kinds.Registry, bus *notify.Bus, tracker *members.Tracker,
	b *broker.Broker, m *metrics.Metrics, pool *pgxpool.Pool) ([]service.Service, error) {
	cfg := a.cfg
	list := []service.Service{bus, reg, tracker}
	lease := cfg.Broker.Lease
	if lease <= 0 {
		lease = broker.DefaultConfig().Lease
	}
	if b != nil {
		list = append(list, b, graph.New(graph.Config{MemberID: a.memberID, Lease: lease, PollInterval: cfg.Broker.PollInterval},
			st, reg, bus, cfg.Log))
	}
	if svc != nil {
		mc := cfg.Maintenance.WithDefaults()
		list = append(list,
			maintenance.NewLeaseReaper(mc.ReapInterval, st, bus, cfg.Log),
			maintenance.NewClaimReaper(mc.ReapInterval, lease, st, bus, cfg.Log),
			maintenance.NewOrphanExpirer(mc.ReapInterval, st, bus, cfg.Log),
			maintenance.NewResyncQueuer(mc.ReapInterval, reg.AnyResync, st, bus, cfg.Log),
			maintenance.NewConfigRequeuer(mc.ReapInterval, maintenance.ConfigRequeueRate, st, bus, cfg.Log),
			maintenance.NewChangeTrimmer(mc.TrimInterval, mc.ChangeRetention, st, cfg.Log),
			maintenance.NewMemberForgetter(mc.TrimInterval, st, cfg.Log),
			reactor.New(reactor.Config{}, st, bus, cfg.Log),
			rollout.New(rollout.Config{Member: a.memberID, Lease: lease}, st, reg, svc, bus, cfg.Log),
		)
	}
	side, err := a.sideListeners(m, pool)
	if err != nil {
		return nil, err
	}
	return append(list, side...), nil
}

// sideListeners binds the profile and metrics listeners that are on.
func (a *App) sideListeners(m *metrics.Metrics, pool *pgxpool.Pool) ([]service.Service, error) {
	var side []service.Service
	var profiles *listener
	if a.cfg.PprofListen != "" {
		var err error
		if profiles, err = pprofListener(a.cfg.PprofListen); err != nil {
			return nil, err
		}
		side = append(side, profiles)
	}
	if m != nil {
		l, err := metricsListener(a.cfg.MetricsListen, m, pool)
		if err != nil {
			if profiles != nil {
				profiles.ln.Close()
			}
			return nil, err
		}
		a.metricsAddr = l.ln.Addr()
		side = append(side, l)
	}
	return side, nil
}

// shutdown stops the API listener and the services together: worker
// streams end only once the broker stops, so the listener's graceful
// shutdown cannot wait for the services, nor they for it.
func (a *App) shutdown() {
	listenerDone := make(chan struct{})
	go func() {
		defer close(listenerDone)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.server.Shutdown(ctx)
		a.server.Close()
	}()
	a.services.Stop()
	<-listenerDone
	a.closePools()
	close(a.done)
}

// Addr is the bound listener address.
func (a *App) Addr() net.Addr { return a.addr }

// Peers lists the other live replicas this one knows of.
func (a *App) Peers() []string {
	var out []string
	for _, m := range a.members.Live() {
		if m.ID != a.memberID {
			out = append(out, m.ID)
		}
	}
	return out
}

// MetricsAddr is the bound metrics listener address, or nil when metrics
// are off.
func (a *App) MetricsAddr() net.Addr { return a.metricsAddr }

// MemberID identifies this replica.
func (a *App) MemberID() string { return a.memberID }

// Stop shuts the server down and waits for it.
func (a *App) Stop() error {
	a.stop()
	<-a.done
	return a.Err()
}

// Done is closed once the server has stopped.
func (a *App) Done() <-chan struct{} { return a.done }

// Err reports why the server stopped on its own, if it did.
func (a *App) Err() error {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	return a.err
}

func (a *App) setErr(err error) {
	a.errMu.Lock()
	a.err = err
	a.errMu.Unlock()
}

func (a *App) closePools() {
	for _, p := range a.pools {
		p.Close()
	}
}

func roles(role string) (control, broker bool, err error) {
	switch role {
	case RoleAll, "":
		return true, true, nil
	case RoleControl:
		return true, false, nil
	case RoleBroker:
		return false, true, nil
	}
	return false, false, fmt.Errorf("--role %q: must be one of all, control, broker", role)
}

func roleList(control, broker bool) []string {
	var out []string
	if control {
		out = append(out, RoleControl)
	}
	if broker {
		out = append(out, RoleBroker)
	}
	return out
}

func memberID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// openSecrets opens the keyring of secret values, refusing to start
// without a key when the database holds sealed values or kinds declare
// secrets: never a silent plaintext mode.
func openSecrets(ctx context.Context, st *store.Store, reg *kinds.Registry, cfg Config) (*secret.Keyring, error) {
	keys, err := secret.Open(ctx, st, cfg.SecretKeys)
	if err != nil {
		return nil, fmt.Errorf("secret keys: %w", err)
	}
	if keys == nil {
		if where := reg.FirstSecret(); where != "" {
			return nil, fmt.Errorf("secret keys: kind %s declares a secret property, but %w", where, secret.ErrNoKey)
		}
		return nil, nil
	}
	reg.UseSecrets(keys)
	cfg.Log.Info("secret values are sealed", "key", keys.KEKIDs()[0], "data_key", keys.ActiveKeyID(), "keys", len(keys.KEKIDs()))
	return keys, nil
}
