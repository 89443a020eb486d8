// Package secret keeps the values of secret schema properties secret: it
// seals them into envelopes (AES-256-GCM under a data key that a
// key-encryption key wraps), opens envelopes for the one reader entitled
// to the clear value (the worker a task goes to, a read-secrets call),
// and turns envelopes into the redaction marker everywhere else.
//
// A sealed value is stored in the JSON document it belongs to, in place
// of the value, as {"$secret": "<data key id>:<base64 of nonce and
// ciphertext>"}. Everything derived from a stored document (history,
// Watch, task records, plans, rollouts, flows) therefore carries only the
// envelope. Sealing is deterministic for one data key: the nonce is a
// keyed hash of the value, so an unchanged value keeps its envelope and a
// flow, a diff or a generation check compares envelopes as it compares
// any value.
package secret

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Field is the one key of an envelope object.
const Field = "$secret"

// MarkerPrefix starts the redaction marker that stands for a secret in
// every output: "(secret:" + a fingerprint + ")". Two outputs show the
// same fingerprint exactly when they hold the same sealed value, so a
// history diff tells a changed secret from an unchanged one without
// showing either.
const MarkerPrefix = "(secret:"

// maxEnvelope bounds an envelope's text: a sealed spec holds at most a
// spec's worth of values.
const maxEnvelope = 4 << 20

// Envelope is a sealed value: the id of the data key that sealed it and
// the nonce followed by the ciphertext.
type Envelope struct {
	KeyID  string
	Sealed []byte
}

// String renders the envelope's text, the value of its Field.
func (e Envelope) String() string {
	return e.KeyID + ":" + base64.StdEncoding.EncodeToString(e.Sealed)
}

// Value returns the envelope as the JSON object stored in a document.
func (e Envelope) Value() map[string]any {
	return map[string]any{Field: e.String()}
}

// Marker returns the redaction marker of the envelope.
func (e Envelope) Marker() string {
	sum := sha256.Sum256(e.Sealed)
	return MarkerPrefix + hex.EncodeToString(sum[:4]) + ")"
}

// validKeyID bounds what a key id may hold: it is written into documents
// and compared, never interpreted.
func validKeyID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// ParseEnvelope reads an envelope's text. Errors say what is wrong
// without quoting the text.
func ParseEnvelope(text string) (Envelope, error) {
	if len(text) > maxEnvelope {
		return Envelope{}, fmt.Errorf("sealed value is %d bytes; the limit is %d", len(text), maxEnvelope)
	}
	id, b64, ok := strings.Cut(text, ":")
	if !ok {
		return Envelope{}, fmt.Errorf("sealed value has no key id (want <key id>:<base64>)")
	}
	if !validKeyID(id) {
		return Envelope{}, fmt.Errorf("sealed value's key id is not 1 to 64 of a-z, 0-9 and -")
	}
	// Strict decoding still skips CR and LF; a sealed value has one
	// spelling, the one it renders back to.
	sealed, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err == nil && base64.StdEncoding.EncodeToString(sealed) != b64 {
		err = errors.New("not canonical")
	}
	if err != nil {
		return Envelope{}, fmt.Errorf("sealed value of key %s is not base64", id)
	}
	if len(sealed) < nonceSize+tagSize {
		return Envelope{}, fmt.Errorf("sealed value of key %s is %d bytes, shorter than a nonce and a tag", id, len(sealed))
	}
	return Envelope{KeyID: id, Sealed: sealed}, nil
}

// AsEnvelope reports whether a decoded JSON value is envelope-shaped (an
// object whose only key is Field, with a string value) and, if so, parses
// it. An envelope-shaped value that does not parse is an error.
func AsEnvelope(v any) (Envelope, bool, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return Envelope{}, false, nil
	}
	raw, ok := m[Field]
	if !ok {
		return Envelope{}, false, nil
	}
	text, ok := raw.(string)
	if !ok {
		return Envelope{}, false, nil
	}
	e, err := ParseEnvelope(text)
	return e, true, err
}

// IsMarker reports whether s is a redaction marker.
func IsMarker(s string) bool {
	return strings.HasPrefix(s, MarkerPrefix) && strings.HasSuffix(s, ")")
}
