package migrate_test

import (
	"context"
	"fmt"
	"io/fs"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/convergehq/converge/migrations"
	"github.com/convergehq/converge/server/internal/migrate"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

// createdMigration is the migration that moved the current revision and
// the Created event onto the resource row.
const createdMigration = "_created_event_and_current_revision_on_resource.sql"

// migrationFile is the file of the migration named *name.
func migrationFile(t *testing.T, name string) string {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "0*"+name)
	if err != nil || len(files) != 1 {
		t.Fatalf("migrations named *%s: %v, %v", name, files, err)
	}
	return files[0]
}

// migrationsBefore holds the versioned migrations older than name's.
func migrationsBefore(t *testing.T, name string) fstest.MapFS {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "0*.sql")
	if err != nil {
		t.Fatal(err)
	}
	limit := migrationFile(t, name)
	out := fstest.MapFS{}
	for _, f := range files {
		if f < limit {
			b, err := fs.ReadFile(migrations.FS, f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = &fstest.MapFile{Data: b}
		}
	}
	return out
}

func histKey(name string) store.ResourceKey {
	return store.ResourceKey{Namespace: "default", Kind: "leaf", Name: name}
}

// histAll returns a leaf's kept revisions, newest first, as
// "generation:vN:source:actor:spec".
func histAll(t *testing.T, s *store.Store, name string) []string {
	t.Helper()
	page, err := s.ResourceHistory(context.Background(), histKey(name), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range page.Revisions {
		out = append(out, fmt.Sprintf("%d:v%d:%s:%s:%s", r.Generation, r.KindVersion, r.Source, r.Actor, r.Spec))
	}
	return out
}

func histApply(t *testing.T, s *store.Store, actor string, rev int64, name, spec string) {
	t.Helper()
	if _, _, err := s.ApplyResources(context.Background(), actor, []store.ApplyInput{{Namespace: "default", Kind: "leaf",
		KindVersion: 1, Name: name, Labels: []byte(`{}`), Spec: []byte(spec), KindRevision: rev}}); err != nil {
		t.Fatal(err)
	}
}

// Data written before the migration (every revision and Created event
// stored) reads the same after it, and keeps working.
func TestCreatedMigrationKeepsHistory(t *testing.T) {
	db := pgtest.NewEmpty(t)
	ctx := t.Context()
	if _, err := migrate.UpFS(ctx, db.URL, migrationsBefore(t, createdMigration)); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// No functions.sql yet, so no triggers: rows as the old triggers and
	// apply left them. a is at generation 2, b at 1; c is a composed child
	// (no Created event); d's current revision was trimmed.
	for _, q := range []string{`
		INSERT INTO resources (id, namespace, kind, kind_version, name, spec, generation) OVERRIDING SYSTEM VALUE VALUES
		    (1, 'default', 'leaf', 1, 'a', '{"n": 2}', 2), (2, 'default', 'leaf', 1, 'b', '{"n": 1}', 1),
		    (3, 'default', 'leaf', 1, 'c', '{}', 1), (4, 'default', 'leaf', 1, 'd', '{}', 3)`,
		`SELECT setval(pg_get_serial_sequence('resources', 'id'), 4)`, `
		INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor, at) VALUES
		    (1, 1, 1, '{"n": 1}', 'apply', 'alice', $1), (1, 2, 1, '{"n": 2}', 'apply', 'bob', $1::timestamptz + interval '1 s'),
		    (2, 1, 1, '{"n": 1}', 'apply', 'carol', $1), (3, 1, 1, '{}', 'compose', 'worker:w', $1)`, `
		INSERT INTO events (resource_id, namespace, kind, name, generation, type, reason, message, actor, at) VALUES
		    (1, 'default', 'leaf', 'a', 1, 'Normal', 'Created', 'created at leaf v1', 'alice', $1),
		    (2, 'default', 'leaf', 'b', 1, 'Normal', 'Created', 'created at leaf v1', 'carol', $1),
		    (NULL, '', 'leaf', 'v1', 0, 'Normal', 'KindNote', 'n', 'op', $1)`,
	} {
		var args []any
		if strings.Contains(q, "$1") {
			args = append(args, at)
		}
		if _, err := db.Pool.Exec(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	s := store.New(db.Pool, db.Pool)
	k, _, err := s.ApplyKind(ctx, store.Kind{Kind: "leaf", Version: 1, Manifest: []byte(`{"kind":"leaf"}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rev := k.Revision
	want := map[string][]string{
		"a": {`2:v1:apply:bob:{"n": 2}`, `1:v1:apply:alice:{"n": 1}`},
		"b": {`1:v1:apply:carol:{"n": 1}`},
		"c": {`1:v1:compose:worker:w:{}`},
		"d": {`3:v1:apply:system:{}`},
	}
	for name, w := range want {
		if got := histAll(t, s, name); !reflect.DeepEqual(got, w) {
			t.Errorf("history of %s after the migration = %v, want %v", name, got, w)
		}
	}
	page, err := s.ResourceHistory(ctx, histKey("a"), 0, 10)
	if err != nil || !page.Revisions[0].At.Equal(at.Add(time.Second)) || !page.Revisions[1].At.Equal(at) {
		t.Fatalf("revision times of a after the migration = %+v, %v", page, err)
	}
	var stored int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM spec_revisions`).Scan(&stored); err != nil || stored != 1 {
		t.Fatalf("%d revisions stored after the migration, want 1 (a's first), %v", stored, err)
	}
	events := func() []string {
		var out []string
		evs, err := s.ListEvents(ctx, store.EventFilter{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Reason == "Created" || e.Reason == "KindNote" {
				out = append(out, fmt.Sprintf("%d %s %s %s", e.ID, e.Reason, e.Name, e.Actor))
			}
		}
		return out
	}
	wantEvents := []string{"3 KindNote v1 op", "2 Created b carol", "1 Created a alice"}
	if got := events(); !reflect.DeepEqual(got, wantEvents) {
		t.Fatalf("events after the migration = %v, want %v", got, wantEvents)
	}

	// An update of b stores its first revision from the row, once.
	histApply(t, s, "dave", rev, "b", `{"n": 2}`)
	if got := histAll(t, s, "b"); !reflect.DeepEqual(got, []string{`2:v1:apply:dave:{"n": 2}`, `1:v1:apply:carol:{"n": 1}`}) {
		t.Fatalf("history of b after an update = %v", got)
	}
	if got := events(); !reflect.DeepEqual(got, wantEvents) {
		t.Fatalf("events after an update = %v, want %v", got, wantEvents)
	}
	// A resource created now takes the next events id.
	histApply(t, s, "erin", rev, "e", `{}`)
	if got := events(); len(got) != 4 || !strings.HasSuffix(got[0], " Created e erin") || !reflect.DeepEqual(got[1:], wantEvents) {
		t.Fatalf("events after a create = %v", got)
	}

	// Down and up again: the stored rows come back and go again, and the
	// functions are applied again.
	version, err := strconv.ParseInt(strings.SplitN(migrationFile(t, createdMigration), "_", 2)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Down(ctx, db.URL, version-1); err != nil {
		t.Fatal(err)
	}
	var created int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM spec_revisions), (SELECT count(*) FROM events WHERE reason = 'Created')`).
		Scan(&stored, &created); err != nil || stored != 7 || created != 3 {
		t.Fatalf("after down: %d revisions and %d Created events stored, want 7 and 3 (%v)", stored, created, err)
	}
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	if got := histAll(t, s, "b"); !reflect.DeepEqual(got, []string{`2:v1:apply:dave:{"n": 2}`, `1:v1:apply:carol:{"n": 1}`}) {
		t.Fatalf("history of b after down and up = %v", got)
	}
	histApply(t, s, "frank", rev, "e", `{"x": 1}`)
	if got := histAll(t, s, "e"); !reflect.DeepEqual(got, []string{`2:v1:apply:frank:{"x": 1}`, `1:v1:apply:erin:{}`}) {
		t.Fatalf("history of e after down, up and an update = %v", got)
	}
	if got := events(); len(got) != 4 || !strings.HasSuffix(got[0], " Created e erin") {
		t.Fatalf("events after down and up = %v", got)
	}
}
