package secret

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRotationResealsEverythingAndRetiresTheOldKey: values sealed under
// key A are re-sealed under B once B is current (A kept for opening), the
// stale count falls to 0, the retired data key is dropped, and then B
// alone opens everything; a restart with A alone is refused.
func TestRotationResealsEverythingAndRetiresTheOldKey(t *testing.T) {
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	ctx := t.Context()
	a, b := newKey(t), newKey(t)
	ka := mustOpen(t, st, a)
	for i, name := range []string{"one", "two", "three"} {
		sealed, err := ka.SealJSON([]byte(`{"url":"x","password":"pw-`+name+`"}`), dbPaths)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
			VALUES ($1, 1, 1, $2, 'apply', 'test')`, i+1, string(sealed)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO provider_configs (kind, kind_version, name, config) VALUES ('k', 1, '', '{"plain":1}')`); err != nil {
		t.Fatal(err)
	}

	kb := mustOpen(t, st, b+"\n"+a)
	if kb.ActiveKeyID() == ka.ActiveKeyID() {
		t.Fatal("the new current key seals with the old data key")
	}
	rot := NewRotator(kb, st, 0, slog.New(slog.DiscardHandler))
	if rot.Stale() != -1 {
		t.Errorf("Stale before a pass = %d, want -1", rot.Stale())
	}
	if n, _ := st.CountStaleSealed(ctx, store.Sealed[1], kb.ActiveKeyID()); n != 3 {
		t.Fatalf("stale revisions before rotation = %d, want 3", n)
	}
	if err := rot.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if rot.Stale() != 0 || rot.Resealed() != 3 {
		t.Errorf("after a pass: stale %d resealed %d, want 0 and 3", rot.Stale(), rot.Resealed())
	}
	if _, err := Open(ctx, st, mustKeys(t, a)); err == nil || !strings.Contains(err.Error(), "do not include") {
		t.Errorf("a start with the retired key alone = %v, want a refusal: the values are sealed by the new one", err)
	}
	onlyB := mustOpen(t, st, b)
	if keys, _ := st.SecretDataKeys(ctx); len(keys) != 1 || keys[0].ID != onlyB.ActiveKeyID() {
		t.Errorf("data keys after a start without the retired key = %v, want only %s (the retired one sealed nothing)", keys, onlyB.ActiveKeyID())
	}
	rows, err := db.Pool.Query(ctx, `SELECT spec::text FROM spec_revisions ORDER BY resource_id`)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		texts = append(texts, s)
	}
	for i, name := range []string{"one", "two", "three"} {
		if strings.Contains(texts[i], "pw-") || !strings.Contains(texts[i], onlyB.ActiveKeyID()) {
			t.Errorf("revision %d = %s, want it sealed under %s", i+1, texts[i], onlyB.ActiveKeyID())
		}
		opened, err := onlyB.OpenJSON(ctx, []byte(texts[i]))
		if err != nil || !strings.Contains(string(opened), "pw-"+name) {
			t.Errorf("open with the new key alone = %s, %v", opened, err)
		}
	}
}

// TestOnlyTheNewestKeyReseals: during a rolling key change a replica
// whose key file still puts the old key first counts stale rows but does
// not re-seal them back to its key.
func TestOnlyTheNewestKeyReseals(t *testing.T) {
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	ctx := t.Context()
	a, b := newKey(t), newKey(t)
	ka := mustOpen(t, st, a+"\n"+b)
	kb := mustOpen(t, st, b+"\n"+a)
	sealed, _ := kb.SealJSON([]byte(`{"password":"p"}`), dbPaths)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO spec_revisions (resource_id, generation, kind_version, spec, source, actor)
		VALUES (1, 1, 1, $1, 'apply', 'test')`, string(sealed)); err != nil {
		t.Fatal(err)
	}
	old := NewRotator(ka, st, 0, slog.New(slog.DiscardHandler))
	if err := old.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if old.Stale() != 1 || old.Resealed() != 0 {
		t.Errorf("the replica with the old key first: stale %d resealed %d, want 1 and 0", old.Stale(), old.Resealed())
	}
}
