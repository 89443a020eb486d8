package migrate_test

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/convergehq/converge/migrations"
	"github.com/convergehq/converge/server/internal/migrate"
	"github.com/convergehq/converge/server/internal/pgtest"
)

var update = flag.Bool("update", false, "rewrite migrations/schema.sql from a freshly migrated database")

// TestSchemaSnapshot: the live schema after Up is what migrations/schema.sql
// says it is. A migration or a function changed without the snapshot (or
// the other way round) fails here; -update rewrites the snapshot.
func TestSchemaSnapshot(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	if _, err := migrate.Up(t.Context(), db.URL); err != nil {
		t.Fatal(err)
	}
	got, err := migrate.Snapshot(t.Context(), db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		path := filepath.Join("..", "..", "..", "migrations", "schema.sql")
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	if got != migrations.Snapshot {
		t.Errorf("the migrated schema differs from migrations/schema.sql; if the change is intended, run\n"+
			"  go test ./server/internal/migrate -run TestSchemaSnapshot -update\n%s", lineDiff(migrations.Snapshot, got))
	}
}

// TestDownAndUpAgainGivesTheSameSchema: Down to 0 leaves nothing behind,
// and Up after it builds the very same schema.
func TestDownAndUpAgainGivesTheSameSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := t.Context()
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	first, err := migrate.Snapshot(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Down(ctx, db.URL, 0); err != nil {
		t.Fatal(err)
	}
	assertNoSchema(t, db.Pool)
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	again, err := migrate.Snapshot(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("schema after Down and Up differs:\n%s", lineDiff(first, again))
	}
}

// TestFunctionsApplyOnlyWhenChanged: a second Up does not replace the
// functions and triggers (that would lock the resources table at every
// server start); a database whose functions were replaced by hand gets
// functions.sql back once its recorded checksum no longer matches.
func TestFunctionsApplyOnlyWhenChanged(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	ctx := t.Context()
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	var at1, at2 string
	if err := db.Pool.QueryRow(ctx, `SELECT applied_at::text FROM converge_functions`).Scan(&at1); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT applied_at::text FROM converge_functions`).Scan(&at2); err != nil {
		t.Fatal(err)
	}
	if at1 != at2 {
		t.Errorf("functions re-applied by an Up with nothing to do (applied_at %s, then %s)", at1, at2)
	}
	if _, err := db.Pool.Exec(ctx, `CREATE OR REPLACE FUNCTION converge_hold(r resources) RETURNS text
		LANGUAGE sql IMMUTABLE AS $$ SELECT 'tampered' $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE converge_functions SET checksum = 'stale'`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	var body string
	if err := db.Pool.QueryRow(ctx, `SELECT pg_get_functiondef('converge_hold(resources)'::regprocedure)`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, "tampered") {
		t.Errorf("converge_hold was not restored from functions.sql:\n%s", body)
	}
}

// TestRefusesADatabaseOfUnknownVersions: a database migrated further than
// this binary knows (a newer converge) is refused with a message that says
// so, rather than served.
func TestRefusesADatabaseOfUnknownVersions(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmpty(t)
	known, err := fs.Glob(migrations.FS, "[0-9][0-9][0-9][0-9][0-9]_*.sql")
	if err != nil || len(known) == 0 {
		t.Fatalf("listing the migrations: %v, %v", known, err)
	}
	// One past the highest version this binary knows: versions may have
	// gaps (a branch adds a later number before an earlier one lands).
	newer := 0
	for _, name := range known {
		v, err := strconv.Atoi(name[:5])
		if err != nil {
			t.Fatalf("migration %s: %v", name, err)
		}
		newer = max(newer, v+1)
	}
	fake := fstest.MapFS{}
	for v := 1; v <= newer; v++ {
		fake[fmt.Sprintf("%05d_fake.sql", v)] = &fstest.MapFile{Data: []byte("-- +goose Up\nSELECT 1;\n-- +goose Down\nSELECT 1;\n")}
	}
	if _, err := migrate.UpFS(t.Context(), db.URL, fake); err != nil {
		t.Fatal(err)
	}
	_, err = migrate.Up(t.Context(), db.URL)
	if want := fmt.Sprintf("schema version %d", newer); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "does not know") {
		t.Fatalf("Up on a database at an unknown version: %v, want a refusal naming version %d", err, newer)
	}
}

// lineDiff lists the lines only in want (-) and only in got (+), in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	inW, inG := map[string]int{}, map[string]int{}
	for _, l := range w {
		inW[l]++
	}
	for _, l := range g {
		inG[l]++
	}
	var b strings.Builder
	for _, l := range w {
		if inG[l] == 0 {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if inW[l] == 0 {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
