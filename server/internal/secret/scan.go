package secret

import (
	"bytes"
	"encoding/json"
)

// span is an envelope found in JSON text: raw[start:end] is the object.
type span struct {
	start, end int
	env        Envelope
}

// envelopeSpans finds the envelopes of valid JSON text without decoding
// it: each {"$secret": "<text>"} object. In valid JSON the bytes `{`,
// optional space and `"$secret"` only ever start an object whose first
// key is Field (a quote inside a string is escaped), so the scan is exact
// for the text the server stores. ok is false when the text holds
// something the scan does not read (a \u escape anywhere, which could
// spell Field; Field anywhere but as the one key of an object with a
// string; an escape in the envelope; an envelope that does not parse):
// the caller then decodes the text.
func envelopeSpans(raw []byte) (spans []span, ok bool) {
	if bytes.Contains(raw, unicodeEscape) { // Field may be spelled with escapes
		return nil, false
	}
	for pos := 0; ; {
		i := bytes.Index(raw[pos:], fieldQuoted)
		if i < 0 {
			return spans, true
		}
		i += pos
		pos = i + len(fieldQuoted)
		j := i - 1
		for j >= 0 && isSpace(raw[j]) {
			j--
		}
		if j < 0 || raw[j] != '{' {
			return nil, false // not a lone envelope: decoding decides
		}
		k := skipSpace(raw, pos)
		if k >= len(raw) || raw[k] != ':' {
			return nil, false
		}
		k = skipSpace(raw, k+1)
		if k >= len(raw) || raw[k] != '"' {
			return nil, false // not a lone envelope: decoding decides
		}
		end := bytes.IndexByte(raw[k+1:], '"')
		if end < 0 {
			return nil, false
		}
		text := raw[k+1 : k+1+end]
		if bytes.IndexByte(text, '\\') >= 0 {
			return nil, false
		}
		after := skipSpace(raw, k+2+end)
		if after >= len(raw) || raw[after] != '}' {
			return nil, false // not a lone envelope: decoding decides
		}
		env, err := ParseEnvelope(string(text))
		if err != nil {
			return nil, false
		}
		spans = append(spans, span{start: j, end: after + 1, env: env})
		pos = after + 1
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && isSpace(raw[i]) {
		i++
	}
	return i
}

// replaceSpans returns raw with each span replaced by what with gives.
func replaceSpans(raw []byte, spans []span, with func(span) ([]byte, error)) ([]byte, error) {
	out := make([]byte, 0, len(raw))
	last := 0
	for _, s := range spans {
		rep, err := with(s)
		if err != nil {
			return nil, err
		}
		out = append(append(out, raw[last:s.start]...), rep...)
		last = s.end
	}
	return append(out, raw[last:]...), nil
}

// markerJSON is an envelope's redaction marker as a JSON string.
func markerJSON(e Envelope) []byte {
	b, _ := json.Marshal(e.Marker())
	return b
}
