package secret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/convergehq/converge/server/internal/store"
)

const (
	nonceSize = 12
	tagSize   = 16
)

// valueAAD binds a sealed value to its data key id.
func valueAAD(keyID string) []byte { return []byte("converge secret value\x00" + keyID) }

// wrapAAD binds a wrapped data key to its id and its wrapping key's.
func wrapAAD(id, kek string) []byte { return []byte("converge data key\x00" + id + "\x00" + kek) }

// KeyStore is where data keys are kept (the database).
type KeyStore interface {
	SecretDataKeys(ctx context.Context) ([]store.SecretDataKey, error)
	AddSecretDataKey(ctx context.Context, k store.SecretDataKey) (store.SecretDataKey, error)
	SecretDataKeyUsed(ctx context.Context, id string) (bool, error)
	DropSecretDataKey(ctx context.Context, id string) error
}

type dataKey struct {
	id, kek  string
	aead     cipher.AEAD
	nonceKey []byte
}

func newDataKey(id, kek string, material []byte) (*dataKey, error) {
	block, err := aes.NewCipher(material)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	mac := hmac.New(sha256.New, material)
	mac.Write([]byte("converge secret nonce"))
	return &dataKey{id: id, kek: kek, aead: aead, nonceKey: mac.Sum(nil)}, nil
}

// seal encrypts plain. The nonce is a keyed hash of plain: one value
// sealed twice by one key gives one envelope (see the package doc).
func (d *dataKey) seal(plain []byte) Envelope {
	mac := hmac.New(sha256.New, d.nonceKey)
	mac.Write(plain)
	nonce := mac.Sum(nil)[:nonceSize]
	out := make([]byte, nonceSize, nonceSize+len(plain)+tagSize)
	copy(out, nonce)
	return Envelope{KeyID: d.id, Sealed: d.aead.Seal(out, nonce, plain, valueAAD(d.id))}
}

func (d *dataKey) open(e Envelope) ([]byte, error) {
	plain, err := d.aead.Open(nil, e.Sealed[:nonceSize], e.Sealed[nonceSize:], valueAAD(d.id))
	if err != nil {
		return nil, fmt.Errorf("a value sealed by data key %s does not open: it was altered, or sealed by another key with the same id", e.KeyID)
	}
	return plain, nil
}

// Keyring seals and opens secret values. It holds the key-encryption
// keys it was given and the data keys they unwrap. A nil *Keyring has no
// keys: sealing and opening fail with ErrNoKey.
type Keyring struct {
	store   KeyStore
	keks    map[string]Key
	current string

	mu     sync.RWMutex
	data   map[string]*dataKey
	active *dataKey
	// unknown are stored data keys none of the keys unwraps.
	unknown map[string]string
}

// ErrNoKey says a secret needs a key the server was not given.
var ErrNoKey = errors.New("the server has no secret key: start it with --secret-key-file or " + EnvVar)

// Open returns a keyring over keys (the first is the current one): it
// unwraps every stored data key one of them wrapped, and creates the
// current key's data key if there is none. A stored data key wrapped by a
// key that is not given is an error: values it sealed could not be opened.
// With no keys it returns nil, or an error when data keys are stored.
func Open(ctx context.Context, st KeyStore, keys []Key) (*Keyring, error) {
	stored, err := st.SecretDataKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading secret data keys: %w", err)
	}
	if len(keys) == 0 {
		if len(stored) > 0 {
			return nil, fmt.Errorf("the database holds secret values sealed under key(s) %s, but %w", keksOf(stored), ErrNoKey)
		}
		return nil, nil
	}
	k := &Keyring{store: st, keks: map[string]Key{}, current: keys[0].ID, data: map[string]*dataKey{}, unknown: map[string]string{}}
	for _, key := range keys {
		k.keks[key.ID] = key
	}
	if err := k.load(stored); err != nil {
		return nil, err
	}
	if err := k.forgetUnused(ctx); err != nil {
		return nil, err
	}
	if len(k.unknown) > 0 {
		return nil, fmt.Errorf("the database holds secret values sealed under key(s) %s, which the given keys (%s) do not include: give the key(s) they were sealed with (a wrong key is refused, never replaced)",
			strings.Join(sortedValues(k.unknown), ", "), strings.Join(k.KEKIDs(), ", "))
	}
	if err := k.ensureActive(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// forgetUnused drops the stored data keys none of the given keys unwraps
// and no stored value uses: their key was retired after rotation re-sealed
// everything. One still in use stays unknown, and the start is refused.
func (k *Keyring) forgetUnused(ctx context.Context) error {
	for id := range k.unknown {
		used, err := k.store.SecretDataKeyUsed(ctx, id)
		if err != nil {
			return fmt.Errorf("looking for values sealed by data key %s: %w", id, err)
		}
		if used {
			continue
		}
		if err := k.store.DropSecretDataKey(ctx, id); err != nil {
			return err
		}
		delete(k.unknown, id)
	}
	return nil
}

func keksOf(stored []store.SecretDataKey) string {
	seen := map[string]string{}
	for _, d := range stored {
		seen[d.KEKID] = d.KEKID
	}
	return strings.Join(sortedValues(seen), ", ")
}

func sortedValues(m map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, v := range m {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

// load unwraps the stored data keys. Callers hold k.mu or own k.
func (k *Keyring) load(stored []store.SecretDataKey) error {
	for _, s := range stored {
		if _, ok := k.data[s.ID]; ok {
			continue
		}
		kek, ok := k.keks[s.KEKID]
		if !ok {
			k.unknown[s.ID] = s.KEKID
			continue
		}
		material, err := unwrap(kek, s)
		if err != nil {
			return err
		}
		d, err := newDataKey(s.ID, s.KEKID, material)
		if err != nil {
			return err
		}
		delete(k.unknown, s.ID)
		k.data[s.ID] = d
		if s.KEKID == k.current {
			k.active = d
		}
	}
	return nil
}

func unwrap(kek Key, s store.SecretDataKey) ([]byte, error) {
	aead, err := gcm(kek.material)
	if err != nil {
		return nil, err
	}
	if len(s.Wrapped) < nonceSize+tagSize {
		return nil, fmt.Errorf("secret data key %s is damaged (%d bytes)", s.ID, len(s.Wrapped))
	}
	material, err := aead.Open(nil, s.Wrapped[:nonceSize], s.Wrapped[nonceSize:], wrapAAD(s.ID, s.KEKID))
	if err != nil {
		return nil, fmt.Errorf("secret data key %s does not unwrap with key %s: the key or the stored data key is wrong", s.ID, kek.ID)
	}
	return material, nil
}

func gcm(material []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(material)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// ensureActive creates the current key's data key if it has none.
func (k *Keyring) ensureActive(ctx context.Context) error {
	if k.active != nil {
		return nil
	}
	material := make([]byte, KeySize)
	idBytes := make([]byte, 6)
	nonce := make([]byte, nonceSize)
	for _, b := range [][]byte{material, idBytes, nonce} {
		if _, err := rand.Read(b); err != nil {
			return err
		}
	}
	kek := k.keks[k.current]
	aead, err := gcm(kek.material)
	if err != nil {
		return err
	}
	id := "dk-" + hex.EncodeToString(idBytes)
	wrapped := aead.Seal(append([]byte(nil), nonce...), nonce, material, wrapAAD(id, kek.ID))
	stored, err := k.store.AddSecretDataKey(ctx, store.SecretDataKey{ID: id, KEKID: kek.ID, Wrapped: wrapped})
	if err != nil {
		return fmt.Errorf("storing the secret data key of %s: %w", kek.ID, err)
	}
	return k.load([]store.SecretDataKey{stored})
}

// KEKIDs returns the ids of the key-encryption keys, the current first.
func (k *Keyring) KEKIDs() []string {
	if k == nil {
		return nil
	}
	out := []string{k.current}
	var rest []string
	for id := range k.keks {
		if id != k.current {
			rest = append(rest, id)
		}
	}
	sort.Strings(rest)
	return append(out, rest...)
}

// newest reports whether the active data key is the newest stored one:
// the rotation's target. During a rolling key change, a replica whose key
// list still puts the old key first is not, and leaves re-sealing to
// the replicas that have the new one.
func (k *Keyring) newest(ctx context.Context) (bool, error) {
	stored, err := k.store.SecretDataKeys(ctx)
	if err != nil || len(stored) == 0 {
		return false, err
	}
	return stored[len(stored)-1].ID == k.ActiveKeyID(), nil
}

// ActiveKeyID returns the id of the data key that seals new values.
func (k *Keyring) ActiveKeyID() string {
	if k == nil {
		return ""
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.active.id
}

// sealBytes seals a value's JSON encoding with the active data key.
func (k *Keyring) sealBytes(plain []byte) (Envelope, error) {
	if k == nil {
		return Envelope{}, ErrNoKey
	}
	k.mu.RLock()
	d := k.active
	k.mu.RUnlock()
	return d.seal(plain), nil
}

// openBytes opens an envelope. A data key not known yet (another replica
// created it after a key change) is looked up in the store once.
func (k *Keyring) openBytes(ctx context.Context, e Envelope) ([]byte, error) {
	if k == nil {
		return nil, ErrNoKey
	}
	k.mu.RLock()
	d := k.data[e.KeyID]
	k.mu.RUnlock()
	if d == nil {
		stored, err := k.store.SecretDataKeys(ctx)
		if err != nil {
			return nil, fmt.Errorf("looking up secret data key %s: %w", e.KeyID, err)
		}
		k.mu.Lock()
		err = k.load(stored)
		d = k.data[e.KeyID]
		kek := k.unknown[e.KeyID]
		k.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if d == nil {
			if kek != "" {
				return nil, fmt.Errorf("a secret value is sealed by data key %s of key %s, which this server was not given", e.KeyID, kek)
			}
			return nil, fmt.Errorf("a secret value is sealed by data key %s, which is not stored", e.KeyID)
		}
	}
	return d.open(e)
}
