package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func hasTable(t *testing.T, db *pgtest.DB, table string) bool {
	t.Helper()
	var found bool
	if err := db.Pool.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&found); err != nil {
		t.Fatalf("%s: %v", db.Name, err)
	}
	return found
}

func TestNewIsolatedWithSchema(t *testing.T) {
	t.Parallel()
	a, b := pgtest.New(t), pgtest.New(t)
	if a.Name == b.Name || a.URL == b.URL {
		t.Fatalf("two New calls share database %s", a.Name)
	}
	for _, db := range []*pgtest.DB{a, b} {
		if !hasTable(t, db, "resources") || !hasTable(t, db, "kinds") {
			t.Errorf("%s lacks the schema", db.Name)
		}
	}
	if _, err := a.Pool.Exec(t.Context(), `INSERT INTO kinds (kind, kind_version, manifest) VALUES ('Bucket', 1, '{}')`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.Pool.QueryRow(t.Context(), "SELECT count(*) FROM kinds").Scan(&n); err != nil || n != 0 {
		t.Errorf("kinds in b after inserting into a: %d, %v; want 0", n, err)
	}
	conn, err := pgx.Connect(t.Context(), a.URL)
	if err != nil {
		t.Fatalf("connect via URL: %v", err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM kinds").Scan(&n); err != nil || n != 1 {
		t.Errorf("kinds in a via URL: %d, %v; want 1", n, err)
	}
}

func TestNewEmptyHasNoSchema(t *testing.T) {
	t.Parallel()
	if db := pgtest.NewEmpty(t); hasTable(t, db, "resources") {
		t.Errorf("NewEmpty database %s has the schema", db.Name)
	}
}

func TestDatabaseDroppedAfterTest(t *testing.T) {
	t.Parallel()
	probe := pgtest.NewEmpty(t)
	var name string
	t.Run("inner", func(t *testing.T) {
		db := pgtest.New(t)
		name = db.Name
		// A connection left open must not keep the database alive.
		conn, err := pgx.Connect(t.Context(), db.URL)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn
	})
	var exists bool
	if err := probe.Pool.QueryRow(t.Context(), "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after its test ended", name)
	}
}

func TestNewClusterMigratedDB(t *testing.T) {
	t.Parallel()
	c := pgtest.NewCluster(t, devpg.Options{})
	url := pgtest.MigratedDB(t, c)
	if err := c.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var found bool
	if err := conn.QueryRow(t.Context(), "SELECT to_regclass('tasks') IS NOT NULL").Scan(&found); err != nil || !found {
		t.Errorf("MigratedDB on a dedicated cluster lacks the schema: %v, %v", found, err)
	}
}

// BenchmarkNew measures cloning the template; the drops run after the
// timed loop, as cleanups.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		pgtest.New(b)
	}
}

// A replicated pair's standby holds the migrated schema and follows the
// primary's writes.
func TestNewReplicated(t *testing.T) {
	t.Parallel()
	r := pgtest.NewReplicated(t)
	ctx := t.Context()
	p, err := pgx.Connect(ctx, r.PrimaryURL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, err := p.Exec(ctx, `INSERT INTO cluster_settings (name, value, set_by) VALUES ('log_level', 'debug', 'test')`); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitReplayed(ctx, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s, err := pgx.Connect(ctx, r.StandbyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	var n int
	if err := s.QueryRow(ctx, `SELECT count(*) FROM cluster_settings WHERE name = 'log_level'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("standby: %d probe rows, %v; want 1", n, err)
	}
}
