package secret

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// memKeys is a KeyStore in memory, for the crypto alone (the SQL is
// tested against PostgreSQL in the store and app tests).
type memKeys struct {
	mu   sync.Mutex
	keys []store.SecretDataKey
}

func (m *memKeys) SecretDataKeys(context.Context) ([]store.SecretDataKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]store.SecretDataKey(nil), m.keys...), nil
}

func (m *memKeys) AddSecretDataKey(_ context.Context, k store.SecretDataKey) (store.SecretDataKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, have := range m.keys {
		if have.KEKID == k.KEKID {
			return have, nil
		}
	}
	m.keys = append(m.keys, k)
	return k, nil
}

// SecretDataKeyUsed says every data key is used: memKeys has no values
// to look at, so a start lacking a key is refused.
func (*memKeys) SecretDataKeyUsed(context.Context, string) (bool, error) { return true, nil }

func (m *memKeys) DropSecretDataKey(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, have := range m.keys {
		if have.ID == id {
			m.keys = append(m.keys[:i], m.keys[i+1:]...)
			break
		}
	}
	return nil
}

func newKey(t *testing.T) string {
	t.Helper()
	k, err := NewKeyText()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustKeys(t *testing.T, text string) []Key {
	t.Helper()
	keys, err := ParseKeys(text)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

func mustOpen(t *testing.T, st KeyStore, text string) *Keyring {
	t.Helper()
	k, err := Open(t.Context(), st, mustKeys(t, text))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var dbPaths = []schema.SecretPath{{"password"}, {"users", schema.AnyToken, "key"}}

const dbDoc = `{"host":"db.internal","password":"hunter2-clear","users":[{"name":"a","key":{"n":1}},{"name":"b","key":"k2"}]}`

func TestSealOpenRoundTripAndRedact(t *testing.T) {
	k := mustOpen(t, &memKeys{}, newKey(t))
	sealed, err := k.SealJSON([]byte(dbDoc), dbPaths)
	if err != nil {
		t.Fatal(err)
	}
	// Quoted, since random ciphertext holds a short bare string by chance.
	for _, clear := range []string{`"hunter2-clear"`, `"k2"`, `"n"`} {
		if strings.Contains(string(sealed), clear) {
			t.Errorf("sealed document %s holds %s in clear", sealed, clear)
		}
	}
	if !strings.Contains(string(sealed), "db.internal") {
		t.Errorf("sealed document %s lost a value that is not secret", sealed)
	}
	again, _ := k.SealJSON([]byte(dbDoc), dbPaths)
	if string(again) != string(sealed) {
		t.Errorf("sealing twice gave two envelopes:\n%s\n%s", sealed, again)
	}
	resealed, _ := k.SealJSON(sealed, dbPaths)
	if string(resealed) != string(sealed) {
		t.Errorf("sealing a sealed document changed it")
	}
	opened, err := k.OpenJSON(t.Context(), sealed)
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, opened, dbDoc) {
		t.Errorf("Open = %s, want %s", opened, dbDoc)
	}
	red := RedactJSON(sealed)
	if strings.Contains(string(red), Field) || strings.Count(string(red), MarkerPrefix) != 3 {
		t.Errorf("Redact = %s, want three markers and no envelope", red)
	}
	other, _ := k.SealJSON([]byte(strings.Replace(dbDoc, "hunter2-clear", "changed", 1)), dbPaths)
	var a, b map[string]any
	json.Unmarshal(RedactJSON(sealed), &a)
	json.Unmarshal(RedactJSON(other), &b)
	if a["password"] == b["password"] || a["users"].([]any)[1].(map[string]any)["key"] != b["users"].([]any)[1].(map[string]any)["key"] {
		t.Errorf("markers do not tell a changed secret from an unchanged one: %v / %v", a, b)
	}
}

func TestTamperedValueDoesNotOpen(t *testing.T) {
	k := mustOpen(t, &memKeys{}, newKey(t))
	sealed, _ := k.SealJSON([]byte(`{"password":"p"}`), dbPaths)
	doc, _ := schema.Decode(sealed)
	e, _, _ := AsEnvelope(doc.(map[string]any)["password"])
	e.Sealed[len(e.Sealed)-1] ^= 1
	if _, err := k.Open(t.Context(), map[string]any{"password": e.Value()}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("Open of a tampered value = %v, want it refused", err)
	}
}

func TestWrongOrMissingKeyIsRefused(t *testing.T) {
	st := &memKeys{}
	good := newKey(t)
	mustOpen(t, st, good)
	if _, err := Open(t.Context(), st, nil); err == nil || !errors.Is(err, ErrNoKey) {
		t.Errorf("Open with no key over stored data keys = %v, want ErrNoKey", err)
	}
	_, err := Open(t.Context(), st, mustKeys(t, newKey(t)))
	if err == nil || !strings.Contains(err.Error(), "do not include") {
		t.Errorf("Open with a wrong key = %v, want a refusal naming the key", err)
	}
	if k, err := Open(t.Context(), &memKeys{}, nil); k != nil || err != nil {
		t.Errorf("Open with no key and nothing stored = %v, %v; want nil, nil", k, err)
	}
	var none *Keyring
	if _, err := none.Seal(map[string]any{"password": "x"}, dbPaths); !errors.Is(err, ErrNoKey) {
		t.Errorf("Seal without a keyring = %v, want ErrNoKey", err)
	}
}

func TestParseKeys(t *testing.T) {
	a, b := newKey(t), newKey(t)
	keys := mustKeys(t, "# current first\n"+a+"\n\n"+b+"\n")
	if len(keys) != 2 || keys[0].ID == keys[1].ID || !strings.HasPrefix(keys[0].ID, "kek-") {
		t.Fatalf("ParseKeys = %v", keys)
	}
	if again := mustKeys(t, a+","+b); again[0].ID != keys[0].ID {
		t.Errorf("a key's id is not stable")
	}
	for _, bad := range []string{"", "# only a comment", "not base64!", "YWJj", a + "\n" + a} {
		if _, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) accepted it", bad)
		} else if strings.Contains(err.Error(), a) {
			t.Errorf("ParseKeys error %q quotes the key", err)
		}
	}
}

func TestRefuseEnvelopesNamesThePath(t *testing.T) {
	doc := map[string]any{"a": []any{1, map[string]any{Field: "dk-1:AAAA"}}}
	err := RefuseEnvelopes(doc)
	if err == nil || !strings.HasPrefix(err.Error(), "/a/1: ") {
		t.Errorf("RefuseEnvelopes = %v, want a refusal at /a/1", err)
	}
	if err := RefuseEnvelopes(map[string]any{"a": map[string]any{Field: "x", "other": 1}}); err != nil {
		t.Errorf("RefuseEnvelopes refused an object with more keys: %v", err)
	}
}

func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestSealRefusesTheMarker(t *testing.T) {
	k := mustOpen(t, &memKeys{}, newKey(t))
	sealed, _ := k.SealJSON([]byte(`{"password":"p"}`), dbPaths)
	var back map[string]any
	json.Unmarshal(RedactJSON(sealed), &back)
	if _, err := k.Seal(back, dbPaths); !errors.Is(err, ErrMarker) {
		t.Errorf("Seal of a read-back marker = %v, want ErrMarker", err)
	}
}
