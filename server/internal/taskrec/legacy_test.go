package taskrec

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/migrate"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

// A record written as a JSON document, before records were stored in
// parts, reads the same after the migration to parts.
func TestJSONRecordReadsAfterTheMigration(t *testing.T) {
	db := pgtest.New(t)
	ctx := t.Context()
	states, err := migrate.Status(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	var parts int64
	for _, s := range states {
		if strings.Contains(s.File, "_task_records_stored_parts") {
			parts = s.Version
		}
	}
	if parts == 0 {
		t.Fatal("no task_records_stored_parts migration")
	}
	if _, err := migrate.Down(ctx, db.URL, parts-1); err != nil {
		t.Fatal(err)
	}
	const input = `{"kind":"leaf","spec":{"n":1}}`
	var id int64
	if err := db.Pool.QueryRow(ctx, `WITH r AS (
		    INSERT INTO resources (namespace, kind, kind_version, name) VALUES ('default', 'leaf', 1, 'old') RETURNING id)
		INSERT INTO task_records (resource_id, task_id, trigger, generation, attempt, worker, session, claimed_at,
		    ended_at, outcome, discard_reason, failed, terminal, error_reason, error, children, truncated, input, result)
		SELECT r.id, 1, 'specChange', 1, 1, 'w', 's', now(), now(), 'applied', '', false, false, '', '', 0, false,
		    $1::json, '{"status":{}}'::json FROM r
		RETURNING id`, input).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Up(ctx, db.URL); err != nil {
		t.Fatal(err)
	}
	// A new pool: the old one's connections know the columns as json.
	pool, err := pgxpool.New(ctx, db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rec, err := store.New(pool, pool).GetTaskRecord(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	in, out, err := Document(rec.Ref.Kind, rec.Input, rec.Result)
	if err != nil || string(in) != input || string(out) != `{"status":{}}` {
		t.Fatalf("Document = %s, %s, %v; want the documents as written", in, out, err)
	}
}
