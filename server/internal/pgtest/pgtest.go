// Package pgtest gives tests real PostgreSQL databases that hold the
// Converge schema.
//
// A test binary that touches the database calls Main from TestMain. Main
// starts one throwaway cluster (package devpg, in memory where the machine
// allows) for the whole binary and migrates a template database once; each
// New then clones the template, which takes milliseconds, so every test
// gets a database of its own and tests may run in parallel.
//
// When the PostgreSQL server binaries are missing, Main fails the binary
// with devpg's message naming what to install: a test that needs a
// database must not pass without one. Setting CONVERGE_TEST_SKIP_DB=1
// turns that failure into a skip of every test that asks for a database,
// with the reason printed.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/migrate"
)

// TemplateName is the migrated database that New clones.
const TemplateName = "converge_template"

// SkipEnv names the environment variable that lets database tests skip
// when PostgreSQL is not installed.
const SkipEnv = "CONVERGE_TEST_SKIP_DB"

// setupTimeout bounds creating or dropping one database.
const setupTimeout = time.Minute

// shared is the binary-wide cluster that Main starts.
var shared struct {
	cluster *devpg.Cluster
	admin   *pgxpool.Pool // on the "postgres" database, for CREATE/DROP DATABASE
	skip    string        // why database tests skip, when they do
	// strategy is the CREATE DATABASE clause that picks a file copy,
	// which clones a small template several times faster than PostgreSQL
	// 15's default of copying it through the WAL. Older servers always copy
	// files and know no such clause.
	strategy string
}

// seq numbers the databases this binary creates, keeping names unique.
var seq atomic.Int64

// DB is one test's database.
type DB struct {
	// Name is the database's name on the shared cluster.
	Name string
	// URL connects to the database as a superuser.
	URL string
	// Pool is a connection pool on the database, created by New; it opens
	// connections on first use and is closed when the test ends.
	Pool *pgxpool.Pool
}

// Main runs the tests of a binary that uses New. Call it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// It starts the cluster, migrates the template, runs the tests, stops the
// cluster and exits with the tests' code.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	cluster, err := devpg.Start(ctx, devpg.Options{
		InMemory: true,
		Settings: map[string]string{"max_connections": "300"},
	})
	if err != nil {
		if errors.Is(err, devpg.ErrNoBinaries) && os.Getenv(SkipEnv) == "1" {
			shared.skip = fmt.Sprintf("database tests skipped (%s=1): %v", SkipEnv, err)
			fmt.Fprintln(os.Stderr, "pgtest:", shared.skip)
			return m.Run()
		}
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if errors.Is(err, devpg.ErrNoBinaries) {
			fmt.Fprintf(os.Stderr, "pgtest: set %s=1 to skip the tests that need a database instead\n", SkipEnv)
		}
		return 1
	}
	code := 1
	if err := prepare(ctx, cluster); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
	} else {
		code = m.Run()
	}
	if shared.admin != nil {
		shared.admin.Close()
	}
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// prepare migrates the template and opens the admin pool.
func prepare(ctx context.Context, cluster *devpg.Cluster) error {
	if err := cluster.CreateDatabase(ctx, TemplateName, ""); err != nil {
		return err
	}
	if _, err := migrate.Up(ctx, cluster.URL(TemplateName)); err != nil {
		return fmt.Errorf("migrate template %s: %w", TemplateName, err)
	}
	admin, err := pgxpool.New(ctx, cluster.URL("postgres"))
	if err != nil {
		return fmt.Errorf("admin pool: %w", err)
	}
	// A stray session on the template would make every clone fail.
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+TemplateName+" ALLOW_CONNECTIONS false"); err != nil {
		admin.Close()
		return fmt.Errorf("lock template %s: %w", TemplateName, err)
	}
	var version int
	if err := admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		admin.Close()
		return fmt.Errorf("server version: %w", err)
	}
	if version >= 150000 {
		shared.strategy = " STRATEGY FILE_COPY"
	}
	shared.cluster, shared.admin = cluster, admin
	return nil
}

// New returns a fresh database holding the migrated schema, dropped when
// the test ends.
func New(t testing.TB) *DB {
	t.Helper()
	return newDB(t, TemplateName)
}

// NewEmpty returns a fresh database with no schema at all, for tests of
// migrations themselves; it is dropped when the test ends.
func NewEmpty(t testing.TB) *DB {
	t.Helper()
	return newDB(t, "template0")
}

func newDB(t testing.TB, template string) *DB {
	t.Helper()
	if shared.skip != "" {
		t.Skip(shared.skip)
	}
	if shared.admin == nil {
		t.Fatal("pgtest: no database cluster; call pgtest.Main(m) from TestMain")
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	name := dbName(t.Name())
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize() + shared.strategy
	if _, err := shared.admin.Exec(ctx, sql); err != nil {
		t.Fatalf("pgtest: create database %s from %s: %v", name, template, err)
	}
	db := &DB{Name: name, URL: shared.cluster.URL(name)}
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		dropDB(t, name)
		t.Fatalf("pgtest: pool on %s: %v", name, err)
	}
	db.Pool = pool
	t.Cleanup(func() {
		pool.Close()
		dropDB(t, name)
	})
	return db
}

func dropDB(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := shared.admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
	}
}

// dbName makes a unique, readable database name from a test name.
func dbName(testName string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	prefix := fmt.Sprintf("t%d_", seq.Add(1))
	// PostgreSQL truncates identifiers to 63 bytes; keep the unique prefix.
	return prefix + trimTo(b.String(), 63-len(prefix))
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// NewCluster starts a cluster of the test's own, for tests that restart
// or kill PostgreSQL, and stops it when the test ends. It skips or fails
// like New when the server binaries are missing.
func NewCluster(t testing.TB, opts devpg.Options) *devpg.Cluster {
	t.Helper()
	c, err := devpg.Start(context.Background(), opts)
	if err != nil {
		if errors.Is(err, devpg.ErrNoBinaries) && os.Getenv(SkipEnv) == "1" {
			t.Skipf("database tests skipped (%s=1): %v", SkipEnv, err)
		}
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return c
}

// MigratedDB creates a new database on cluster, applies the schema and
// returns its URL. The database goes away with the cluster.
func MigratedDB(t testing.TB, cluster *devpg.Cluster) string {
	t.Helper()
	_, url := migratedDB(t, cluster)
	return url
}

func migratedDB(t testing.TB, cluster *devpg.Cluster) (name, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	name = dbName(t.Name())
	if err := cluster.CreateDatabase(ctx, name, ""); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	url = cluster.URL(name)
	if _, err := migrate.Up(ctx, url); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return name, url
}
