package migrate_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/migrate"
	"github.com/convergehq/converge/server/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// coreTables and coreFunctions are part of the schema; later migrations
// may add more, never fewer.
var (
	coreTables    = []string{"changes", "events", "kinds", "members", "resources", "tasks"}
	coreFunctions = []string{"converge_hold", "converge_merge_conditions", "converge_on_update", "converge_phase"}
)

// schemaObjects lists the tables (other than the version table) and the
// converge_ functions in the public schema.
func schemaObjects(t *testing.T, pool *pgxpool.Pool) (tables, functions []string) {
	t.Helper()
	ctx := t.Context()
	rows, err := pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name <> $1 ORDER BY 1`, migrate.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows, err = pool.Query(ctx, `SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND p.proname LIKE 'converge\_%' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		functions = append(functions, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return tables, functions
}

func assertSchema(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	tables, functions := schemaObjects(t, pool)
	for _, want := range coreTables {
		if !slices.Contains(tables, want) {
			t.Errorf("table %s missing after Up; have %v", want, tables)
		}
	}
	for _, want := range coreFunctions {
		if !slices.Contains(functions, want) {
			t.Errorf("function %s missing after Up; have %v", want, functions)
		}
	}
}

func assertNoSchema(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	tables, functions := schemaObjects(t, pool)
	if len(tables) != 0 || len(functions) != 0 {
		t.Errorf("after Down to 0: tables %v and functions %v remain, want none", tables, functions)
	}
}

func TestUpDownUp(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := t.Context()

	if v, err := migrate.Version(ctx, db.URL); err != nil || v != 0 {
		t.Fatalf("Version of an empty database = %d, %v; want 0", v, err)
	}
	states, err := migrate.Status(ctx, db.URL)
	if err != nil || len(states) == 0 {
		t.Fatalf("Status = %v, %v; want every embedded migration", states, err)
	}
	for _, s := range states {
		if s.Applied() {
			t.Errorf("empty database: %s reported applied", s.File)
		}
	}
	if got, want := states[0].String(), "pending  -                     00001_schema.sql"; got != want {
		t.Errorf("pending State.String() = %q, want %q", got, want)
	}
	latest := states[len(states)-1].Version

	steps, err := migrate.Up(ctx, db.URL)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	if len(steps) != len(states) || steps[0].File != "00001_schema.sql" || steps[0].Direction != "up" || steps[0].Version != 1 {
		t.Fatalf("Up steps = %v, want one up step per migration starting with 00001_schema.sql", steps)
	}
	if !strings.Contains(steps[0].String(), "up   00001_schema.sql (") {
		t.Errorf("Step.String() = %q", steps[0].String())
	}
	assertSchema(t, db.Pool)
	if v, err := migrate.Version(ctx, db.URL); err != nil || v != latest {
		t.Errorf("Version after Up = %d, %v; want %d", v, err, latest)
	}
	states, err = migrate.Status(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if !s.Applied() || s.Version <= 0 || !strings.HasSuffix(s.File, ".sql") {
			t.Errorf("after Up: status %+v, want applied with a version and file", s)
		}
	}
	if got := states[0].String(); !strings.HasPrefix(got, "applied  20") || !strings.HasSuffix(got, "Z  00001_schema.sql") {
		t.Errorf("applied State.String() = %q, want \"applied  <RFC 3339 UTC time>  00001_schema.sql\"", got)
	}
	if again, err := migrate.Up(ctx, db.URL); err != nil || len(again) != 0 {
		t.Errorf("second Up = %v, %v; want no steps", again, err)
	}

	steps, err = migrate.Down(ctx, db.URL, 0)
	if err != nil {
		t.Fatalf("Down to 0: %v", err)
	}
	if len(steps) != len(states) || steps[len(steps)-1].Version != 1 || steps[0].Direction != "down" {
		t.Errorf("Down steps = %v, want every migration rolled back, newest first", steps)
	}
	assertNoSchema(t, db.Pool)
	if v, err := migrate.Version(ctx, db.URL); err != nil || v != 0 {
		t.Errorf("Version after Down to 0 = %d, %v; want 0", v, err)
	}
	states, err = migrate.Status(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.Applied() {
			t.Errorf("after Down to 0: %s still applied", s.File)
		}
	}

	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatalf("Up after Down: %v", err)
	}
	assertSchema(t, db.Pool)
}

func TestConcurrentUp(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	states, err := migrate.Status(t.Context(), db.URL)
	if err != nil {
		t.Fatal(err)
	}

	const replicas = 3
	var wg sync.WaitGroup
	results := make([][]migrate.Step, replicas)
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() { results[i], errs[i] = migrate.Up(context.Background(), db.URL) })
	}
	wg.Wait()

	applied := 0
	for i := range replicas {
		if errs[i] != nil {
			t.Errorf("replica %d: Up: %v", i, errs[i])
		}
		applied += len(results[i])
	}
	if applied != len(states) {
		t.Errorf("replicas applied %d steps in all, want each of the %d migrations exactly once", applied, len(states))
	}
	assertSchema(t, db.Pool)
}

func TestFailureNamesFile(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	fsys := fstest.MapFS{
		"00001_good.sql": {Data: []byte("-- +goose Up\nCREATE TABLE good (id int);\n-- +goose Down\nDROP TABLE good;\n")},
		"00002_bad.sql":  {Data: []byte("-- +goose Up\nCREATE TABLE bad (id nosuchtype);\n-- +goose Down\nDROP TABLE bad;\n")},
	}
	steps, err := migrate.UpFS(t.Context(), db.URL, fsys)
	if err == nil || !strings.Contains(err.Error(), "00002_bad.sql") || !strings.Contains(err.Error(), "nosuchtype") {
		t.Fatalf("Up error = %v, want one naming 00002_bad.sql and the cause", err)
	}
	t.Logf("Up error: %v", err)
	if len(steps) != 1 || steps[0].File != "00001_good.sql" {
		t.Errorf("steps before the failure = %v, want 00001_good.sql", steps)
	}

	fsys["00002_bad.sql"] = &fstest.MapFile{Data: []byte("-- +goose Up\nSELECT 1;\n-- +goose Down\nDROP TABLE nosuchtable;\n")}
	if _, err := migrate.UpFS(t.Context(), db.URL, fsys); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.DownFS(t.Context(), db.URL, fsys, 0); err == nil || !strings.Contains(err.Error(), "00002_bad.sql") {
		t.Errorf("Down error = %v, want one naming 00002_bad.sql", err)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	if _, err := migrate.Up(t.Context(), "postgres://%zz"); err == nil || !strings.Contains(err.Error(), "database URL") {
		t.Errorf("Up with a malformed URL: %v, want an error naming the database URL", err)
	}
	if _, err := migrate.Down(t.Context(), "postgres://localhost/x", -1); err == nil || !strings.Contains(err.Error(), "toVersion") {
		t.Errorf("Down to -1: %v, want an error naming toVersion", err)
	}
}

func TestAppliedAtIsUTCWhateverTheServerZone(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	if _, err := db.Pool.Exec(t.Context(), "ALTER DATABASE "+db.Name+" SET timezone = 'Asia/Tokyo'"); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	if _, err := migrate.Up(t.Context(), db.URL); err != nil {
		t.Fatal(err)
	}
	states, err := migrate.Status(t.Context(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if at := states[0].AppliedAt; at.Before(before.Add(-time.Minute)) || at.After(time.Now().Add(time.Minute)) {
		t.Errorf("AppliedAt = %s, want about %s", at, before.UTC())
	}
}
