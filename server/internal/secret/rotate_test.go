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
	keys, _ := st.SecretDataKeys(ctx)
	if len(keys) != 1 || keys[0].ID != kb.ActiveKeyID() {
		t.Errorf("data keys after rotation = %v, want only %s", keys, kb.ActiveKeyID())
	}
	onlyB := mustOpen(t, st, b)
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
	if _, err := Open(ctx, st, mustKeys(t, a)); err == nil || !strings.Contains(err.Error(), "do not include") {
		t.Errorf("a start with the retired key alone = %v, want a refusal", err)
	}
}
