package secret

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
)

// EnvVar is the environment variable a server reads its key-encryption
// keys from when no key file is given.
const EnvVar = "CONVERGE_SECRET_KEY"

// KeySize is the size of every key: AES-256.
const KeySize = 32

// Key is a key-encryption key. Its id is derived from the key, so the
// same key always has the same id and a wrong key never matches one.
type Key struct {
	ID       string
	material []byte
}

// keyID derives a key's id: a hash of the key, not the key.
func keyID(material []byte) string {
	sum := sha256.Sum256(append([]byte("converge key id\x00"), material...))
	return "kek-" + hex.EncodeToString(sum[:6])
}

// ParseKeys reads key-encryption keys: base64 of 32 bytes each, one a
// line or separated by commas; blank lines and lines starting with # are
// ignored. The first key is the current one, which seals new values; the
// others are kept to open what they sealed until rotation has re-sealed
// it. Errors name the key by its position, never its text.
func ParseKeys(text string) ([]Key, error) {
	var keys []Key
	seen := map[string]bool{}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, field := range strings.Split(line, ",") {
			field = strings.TrimSpace(field)
			if field == "" {
				continue
			}
			n++
			material, err := base64.StdEncoding.Strict().DecodeString(field)
			if err != nil {
				if material, err = base64.RawStdEncoding.Strict().DecodeString(field); err != nil {
					return nil, fmt.Errorf("key %d is not base64", n)
				}
			}
			if len(material) != KeySize {
				return nil, fmt.Errorf("key %d is %d bytes; a key is %d random bytes, base64-encoded (converge keygen makes one)", n, len(material), KeySize)
			}
			k := Key{ID: keyID(material), material: material}
			if seen[k.ID] {
				return nil, fmt.Errorf("key %d (%s) is listed twice", n, k.ID)
			}
			seen[k.ID] = true
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no key given")
	}
	return keys, nil
}

// LoadKeys reads the keys from file if it is set, else from the
// environment variable EnvVar; it returns no keys, and no error, when
// neither is set. source says where the keys came from.
func LoadKeys(file string) (keys []Key, source string, err error) {
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, "", fmt.Errorf("--secret-key-file: %w", err)
		}
		keys, err := ParseKeys(string(data))
		if err != nil {
			return nil, "", fmt.Errorf("--secret-key-file %s: %w", file, err)
		}
		return keys, file, nil
	}
	if v, ok := os.LookupEnv(EnvVar); ok {
		keys, err := ParseKeys(v)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", EnvVar, err)
		}
		return keys, "$" + EnvVar, nil
	}
	return nil, "", nil
}

// NewKeyText returns a fresh random key as ParseKeys reads it.
func NewKeyText() (string, error) {
	material := make([]byte, KeySize)
	if _, err := rand.Read(material); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(material), nil
}

// EnsureKeyFile returns the keys of path, first writing a fresh key to it
// (mode 0600) when it does not exist: a development server's throwaway
// key. created says whether it wrote one.
func EnsureKeyFile(path string) (keys []Key, created bool, err error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		text, err := NewKeyText()
		if err != nil {
			return nil, false, err
		}
		body := "# Converge secret key-encryption key, generated for a development server.\n" + text + "\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return nil, false, err
		}
		created = true
	}
	keys, _, err = LoadKeys(path)
	return keys, created, err
}
