package secret

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/convergehq/converge/server/internal/schema"
)

// fieldQuoted is how Field appears in any JSON text holding an envelope.
var fieldQuoted = []byte(`"` + Field + `"`)

// Contains reports whether JSON text may hold an envelope: a cheap test
// that lets documents without secrets pass untouched. Text with a \u
// escape may spell Field with one, so it counts too.
func Contains(raw []byte) bool {
	return bytes.Contains(raw, fieldQuoted) || bytes.Contains(raw, unicodeEscape)
}

var unicodeEscape = []byte(`\u`)

// ErrMarker refuses a redaction marker where a secret value belongs.
var ErrMarker = errors.New("the value is the redaction marker " + MarkerPrefix + "...), not a secret: send the secret's value (conctl secrets read shows it)")

// Seal replaces every value at the given secret paths of a decoded
// document with its envelope, in place, and returns the document. Values
// that are envelopes already are kept: a flow may have copied one. A
// path of the root seals each of the root's values.
func (k *Keyring) Seal(doc any, paths []schema.SecretPath) (any, error) {
	for _, p := range paths {
		if len(p) == 0 {
			p = schema.SecretPath{schema.AnyToken}
		}
		var err error
		if doc, err = k.sealAt(doc, p); err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func (k *Keyring) sealAt(v any, p schema.SecretPath) (any, error) {
	if len(p) == 0 {
		if _, ok, err := AsEnvelope(v); ok && err == nil {
			return v, nil
		}
		if str, ok := v.(string); ok && IsMarker(str) {
			// Output read back and sent again (a get piped into an apply):
			// sealing the marker would replace the secret with its stand-in.
			return nil, ErrMarker
		}
		plain, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encoding a secret value: %w", err)
		}
		e, err := k.sealBytes(plain)
		if err != nil {
			return nil, err
		}
		return e.Value(), nil
	}
	tok, rest := p[0], p[1:]
	switch x := v.(type) {
	case map[string]any:
		if tok == schema.AnyToken {
			for name, child := range x {
				nv, err := k.sealAt(child, rest)
				if err != nil {
					return nil, err
				}
				x[name] = nv
			}
		} else if child, ok := x[tok]; ok {
			nv, err := k.sealAt(child, rest)
			if err != nil {
				return nil, err
			}
			x[tok] = nv
		}
	case []any:
		for i, child := range x {
			if tok != schema.AnyToken && tok != strconv.Itoa(i) {
				continue
			}
			nv, err := k.sealAt(child, rest)
			if err != nil {
				return nil, err
			}
			x[i] = nv
		}
	}
	return v, nil
}

// SealJSON is Seal on JSON text. Without paths it returns raw as it is.
func (k *Keyring) SealJSON(raw []byte, paths []schema.SecretPath) ([]byte, error) {
	if len(paths) == 0 || len(raw) == 0 {
		return raw, nil
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, err
	}
	if doc, err = k.Seal(doc, paths); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// Open returns the document with every envelope replaced by the value it
// seals. The document is not modified: changed branches are copied, and
// a document without envelopes is returned as it is.
func (k *Keyring) Open(ctx context.Context, doc any) (any, error) {
	out, _, err := k.open(ctx, doc)
	return out, err
}

func (k *Keyring) open(ctx context.Context, v any) (any, bool, error) {
	if e, ok, err := AsEnvelope(v); ok {
		if err != nil {
			return nil, false, err
		}
		plain, err := k.openBytes(ctx, e)
		if err != nil {
			return nil, false, err
		}
		clear, err := schema.Decode(plain)
		if err != nil {
			return nil, false, fmt.Errorf("a value sealed by data key %s is not JSON once opened", e.KeyID)
		}
		return clear, true, nil
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for name, child := range x {
			nv, changed, err := k.open(ctx, child)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for n, c := range x {
						out[n] = c
					}
				}
				out[name] = nv
			}
		}
		if out != nil {
			return out, true, nil
		}
	case []any:
		var out []any
		for i, child := range x {
			nv, changed, err := k.open(ctx, child)
			if err != nil {
				return nil, false, err
			}
			if changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = nv
			}
		}
		if out != nil {
			return out, true, nil
		}
	}
	return v, false, nil
}

// OpenJSON is Open on JSON text; text without envelopes is returned as it is.
func (k *Keyring) OpenJSON(ctx context.Context, raw []byte) ([]byte, error) {
	if !Contains(raw) {
		return raw, nil
	}
	if spans, ok := envelopeSpans(raw); ok {
		if len(spans) == 0 {
			return raw, nil
		}
		// A sealed value is the JSON encoding of the value: it replaces
		// its envelope as it is, with no decoding of the document.
		return replaceSpans(raw, spans, func(s span) ([]byte, error) {
			plain, err := k.openBytes(ctx, s.env)
			if err == nil && !json.Valid(plain) {
				err = fmt.Errorf("a value sealed by data key %s is not JSON once opened", s.env.KeyID)
			}
			return plain, err
		})
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, err
	}
	out, changed, err := k.open(ctx, doc)
	if err != nil || !changed {
		return raw, err
	}
	return json.Marshal(out)
}

// Redact returns the document with every envelope replaced by its
// redaction marker, copying changed branches. It is the one way a stored
// document becomes output: API responses, Watch, the UI, history.
func Redact(v any) any {
	out, _ := redact(v)
	return out
}

func redact(v any) (any, bool) {
	if e, ok, err := AsEnvelope(v); ok {
		if err != nil {
			return MarkerPrefix + "unreadable)", true
		}
		return e.Marker(), true
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for name, child := range x {
			if nv, changed := redact(child); changed {
				if out == nil {
					out = make(map[string]any, len(x))
					for n, c := range x {
						out[n] = c
					}
				}
				out[name] = nv
			}
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, child := range x {
			if nv, changed := redact(child); changed {
				if out == nil {
					out = append([]any(nil), x...)
				}
				out[i] = nv
			}
		}
		if out != nil {
			return out, true
		}
	}
	return v, false
}

// RedactJSON is Redact on JSON text; text without envelopes, or that is
// not JSON, is returned as it is.
func RedactJSON(raw []byte) []byte {
	if !Contains(raw) {
		return raw
	}
	if spans, ok := envelopeSpans(raw); ok {
		if len(spans) == 0 {
			return raw
		}
		out, _ := replaceSpans(raw, spans, func(s span) ([]byte, error) { return markerJSON(s.env), nil })
		return out
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return raw
	}
	out, changed := redact(doc)
	if !changed {
		return raw
	}
	b, err := json.Marshal(out)
	if err != nil {
		return []byte(`"` + MarkerPrefix + "unreadable)" + `"`)
	}
	return b
}

// RefuseEnvelopes refuses a document from a client or a worker that holds
// an envelope-shaped object: only the server seals values, so such an
// object is either a mistake or an attempt to have the server open a
// value it did not seal for this document. The error names the path.
func RefuseEnvelopes(doc any) error {
	return refuseAt(doc, "")
}

func refuseAt(v any, at string) error {
	if _, ok, _ := AsEnvelope(v); ok {
		return fmt.Errorf("%s: an object whose only key is %q is a sealed secret value, which only the server writes; send the value itself",
			schema.DisplayPointer(at), Field)
	}
	switch x := v.(type) {
	case map[string]any:
		for name, child := range x {
			if err := refuseAt(child, schema.JoinPointer(at, name)); err != nil {
				return err
			}
		}
	case []any:
		for i, child := range x {
			if err := refuseAt(child, schema.JoinPointer(at, strconv.Itoa(i))); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapEnvelopes rewrites every envelope of JSON text with fn.
func (k *Keyring) mapEnvelopes(ctx context.Context, raw []byte, fn func(Envelope) (Envelope, error)) ([]byte, error) {
	if !Contains(raw) {
		return raw, nil
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, err
	}
	var walk func(v any) (any, error)
	walk = func(v any) (any, error) {
		if e, ok, err := AsEnvelope(v); ok {
			if err != nil {
				return nil, err
			}
			next, err := fn(e)
			if err != nil {
				return nil, err
			}
			return next.Value(), nil
		}
		switch x := v.(type) {
		case map[string]any:
			for name, child := range x {
				nv, err := walk(child)
				if err != nil {
					return nil, err
				}
				x[name] = nv
			}
		case []any:
			for i, child := range x {
				nv, err := walk(child)
				if err != nil {
					return nil, err
				}
				x[i] = nv
			}
		}
		return v, nil
	}
	out, err := walk(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}
