// Package devpg starts throwaway PostgreSQL clusters from the server
// binaries installed on the machine. `converge dev`, the test harness and
// the benchmark use it; a real deployment points at its own database.
// Start only looks for the binaries; FindOrInstall also installs them when
// it can (as root, with apt-get), for commands a person runs on a fresh
// machine.
//
// A cluster lives in a fresh directory named converge-pg-* under
// os.TempDir() (or a memory file system, see Options.InMemory): data/ is
// the data directory, postgres.log the server log (unless Options.Log is
// set) and the Unix socket sits beside them. The server listens on
// 127.0.0.1 only and trusts every local connection. When the calling
// process runs as root, PostgreSQL runs as the OS user "postgres", since
// it refuses to run as root.
package devpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configure a cluster. The zero value is a fast, disposable
// cluster on a free port.
type Options struct {
	// BinDir is the directory holding initdb and postgres, as FindOrInstall
	// returns it; "" finds them on PATH, in CONVERGE_PG_BIN or in the usual
	// install locations, without installing anything.
	BinDir string
	// Port to listen on; 0 picks a free one.
	Port int
	// Durable turns fsync, synchronous_commit and full_page_writes on.
	// Otherwise they are off: much faster, and a machine crash may lose or
	// corrupt data, which a throwaway cluster does not mind. Killing the
	// server alone (Kill) loses nothing in either profile once the WAL
	// writer has run, but only Durable guarantees a commit survives Kill.
	Durable bool
	// Settings are extra server settings, passed as -c name=value and
	// applied after the profile's, e.g. "max_connections": "300" or
	// "shared_preload_libraries": "pg_stat_statements".
	Settings map[string]string
	// Keep leaves the directory in place after Stop.
	Keep bool
	// InMemory puts the cluster on a memory-backed file system (/dev/shm on
	// Linux, when it has 2 GiB free) instead of os.TempDir(), and caps the
	// WAL kept between checkpoints at 256 MB unless Settings say otherwise.
	// Creating files there is far cheaper than on disk, which makes initdb
	// twice and CREATE DATABASE ten times as fast; the data then takes RAM
	// and does not survive a reboot. Meant for tests.
	InMemory bool
	// Log receives the server's output. Nil writes it to postgres.log in
	// the cluster's directory (see LogPath).
	Log io.Writer
	// StartTimeout bounds how long Start and Restart wait for the server to
	// accept connections; 0 means 30 seconds.
	StartTimeout time.Duration
}

const (
	defaultStartTimeout = 30 * time.Second
	// stopTimeout is how long a fast shutdown may take before SIGKILL.
	stopTimeout = 30 * time.Second
)

// Cluster is a running (or stopped) throwaway PostgreSQL cluster. Its
// methods are safe for concurrent use.
type Cluster struct {
	opts    Options
	bin     string
	dir     string
	logPath string
	owner   *owner
	tail    tailBuffer // the server's recent output when opts.Log is set

	mu        sync.Mutex
	port      int
	proc      *process // nil while the server is down
	logOffset int64    // size of postgres.log when the current server started
	stopped   bool
}

// Start creates a cluster directory, runs initdb and starts postgres,
// returning once the server accepts connections. ctx bounds startup only;
// the server runs until Stop. On the way it removes directories of
// clusters whose owning process and server have both died.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	bin, err := opts.binDir()
	if err != nil {
		return nil, err
	}
	own, err := serverOwner()
	if err != nil {
		return nil, err
	}
	parent := os.TempDir()
	mem := memDir()
	for _, p := range []string{parent, mem} {
		if p != "" {
			sweepStale(p)
		}
	}
	if opts.InMemory && mem != "" {
		parent = mem
	}
	dir, err := os.MkdirTemp(parent, dirPattern)
	if err != nil {
		return nil, fmt.Errorf("devpg: create cluster directory: %w", err)
	}
	c := &Cluster{opts: opts, bin: bin, dir: dir, owner: own}
	if opts.Log == nil {
		c.logPath = filepath.Join(dir, "postgres.log")
	}
	if err := c.create(ctx); err != nil {
		if !opts.Keep {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) create(ctx context.Context) error {
	if err := writePidFile(c.dir, os.Getpid(), 0); err != nil {
		return err
	}
	if err := chown(c.dir, c.owner); err != nil {
		return err
	}
	if err := c.initdb(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startServer(ctx, c.opts.Port)
}

// URL returns the connection URL of database on this cluster, as the
// superuser "postgres" over TCP.
func (c *Cluster) URL(database string) string {
	return urlFor(c.Port(), database)
}

func urlFor(port int, database string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, url.PathEscape(database))
}

// Port returns the TCP port the server listens on.
func (c *Cluster) Port() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.port
}

// Dir returns the cluster's directory; the data directory is Dir()/data.
func (c *Cluster) Dir() string { return c.dir }

// LogPath returns the server log's path, or "" when Options.Log receives
// the output instead.
func (c *Cluster) LogPath() string { return c.logPath }

// CreateDatabase creates database name, copied from template, or from
// PostgreSQL's default template when template is "".
func (c *Cluster) CreateDatabase(ctx context.Context, name, template string) error {
	if name == "" {
		return errors.New("devpg: CreateDatabase: name is empty")
	}
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("devpg: create database %q: connect: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if template != "" {
		sql += " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	}
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("devpg: create database %q (template %q): %w", name, template, err)
	}
	return nil
}

// Stop shuts the server down (SIGINT, PostgreSQL's fast shutdown; SIGKILL
// if that takes over 30 seconds) and removes the directory unless
// Options.Keep is set. Stopping a stopped cluster does nothing.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	c.stopped = true
	err := c.shutdown()
	if c.opts.Keep {
		// Without a pid file the next Start's sweep leaves the directory be.
		if rmErr := os.Remove(filepath.Join(c.dir, pidFile)); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			err = errors.Join(err, fmt.Errorf("devpg: remove pid file: %w", rmErr))
		}
		return err
	}
	if rmErr := os.RemoveAll(c.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("devpg: remove %s: %w", c.dir, rmErr))
	}
	return err
}

// Restart stops the server with a fast shutdown, if it is running, and
// starts it again on the same directory and port. It also brings a
// cluster back after Kill, through crash recovery.
func (c *Cluster) Restart(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("devpg: Restart: the cluster is stopped")
	}
	if err := c.shutdown(); err != nil {
		return err
	}
	return c.startServer(ctx, c.port)
}

// Kill SIGKILLs the server and its backends at once, as a crash would.
// The directory stays; Restart recovers the cluster, Stop removes it.
func (c *Cluster) Kill() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return errors.New("devpg: Kill: the server is not running")
	}
	killTree(c.proc)
	<-c.proc.done
	c.proc = nil
	return nil
}

var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.]*$`)

func (o Options) validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("devpg: Options.Port: %d is not a TCP port (0 picks a free one)", o.Port)
	}
	if o.StartTimeout < 0 {
		return fmt.Errorf("devpg: Options.StartTimeout: %s is negative", o.StartTimeout)
	}
	for k, v := range o.Settings {
		if !settingName.MatchString(k) {
			return fmt.Errorf("devpg: Options.Settings: %q is not a PostgreSQL setting name", k)
		}
		if strings.ContainsRune(v, 0) {
			return fmt.Errorf("devpg: Options.Settings[%q]: value holds a NUL byte", k)
		}
	}
	return nil
}

// serverSettings returns the profile's settings overlaid with
// Options.Settings, as sorted name=value pairs.
func (o Options) serverSettings() []string {
	mode := "off"
	if o.Durable {
		mode = "on"
	}
	all := map[string]string{
		"listen_addresses":   "127.0.0.1",
		"fsync":              mode,
		"synchronous_commit": mode,
		"full_page_writes":   mode,
	}
	if o.InMemory {
		all["max_wal_size"] = "256MB"
		all["min_wal_size"] = "32MB"
	}
	maps.Copy(all, o.Settings)
	pairs := make([]string, 0, len(all))
	for _, k := range slices.Sorted(maps.Keys(all)) {
		pairs = append(pairs, k+"="+all[k])
	}
	return pairs
}

func (o Options) binDir() (string, error) {
	if o.BinDir == "" {
		return findBinaries()
	}
	if !hasBinaries(o.BinDir) {
		return "", fmt.Errorf("devpg: Options.BinDir: %w in %s", ErrNoBinaries, o.BinDir)
	}
	return o.BinDir, nil
}

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout == 0 {
		return defaultStartTimeout
	}
	return o.StartTimeout
}
