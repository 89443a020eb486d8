package secret

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

// FuzzParseEnvelope: envelope text from a stored (or forged) document
// never panics, and what parses renders back to itself.
func FuzzParseEnvelope(f *testing.F) {
	f.Add("dk-0a1b2c:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
	f.Add(":")
	f.Add("dk-x:!!")
	f.Add("UPPER:AAAA")
	f.Fuzz(func(t *testing.T, text string) {
		e, err := ParseEnvelope(text)
		if err != nil {
			if strings.Contains(err.Error(), text) && len(text) > 8 {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		if e.String() != text {
			t.Fatalf("ParseEnvelope(%q).String() = %q", text, e.String())
		}
		_ = e.Marker()
	})
}

// FuzzOpenRedact: any document, envelopes or not, opens without a panic
// (an error at worst) and redacts to a document without envelopes.
func FuzzOpenRedact(f *testing.F) {
	f.Add([]byte(`{"a":{"$secret":"dk-1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}`))
	f.Add([]byte(`[{"$secret":5},{"$secret":"x"}]`))
	f.Add([]byte(dbDoc))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := schema.Decode(data)
		if err != nil {
			return
		}
		k := mustOpen(t, &memKeys{}, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
		_, _ = k.Open(t.Context(), doc)
		red := RedactJSON(data)
		rdoc, err := schema.Decode(red)
		if err != nil {
			t.Fatalf("RedactJSON made invalid JSON %q", red)
		}
		if RefuseEnvelopes(rdoc) != nil {
			t.Fatalf("RedactJSON(%s) = %s still holds an envelope", data, red)
		}
	})
}

// FuzzScanMatchesDecode: the scan that opens and redacts stored text
// without decoding it agrees with decoding it, on any JSON text.
func FuzzScanMatchesDecode(f *testing.F) {
	f.Add([]byte(`{"a":{"$secret":"dk-1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},"b":[{ "$secret" : "dk-1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }]}`))
	f.Add([]byte(`{"a":{"$secret":"x","b":1},"c":"{\"$secret\":\"dk-1:AAAA\"}"}`))
	f.Add([]byte(`{"\u0024secret":"dk-1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := schema.Decode(data)
		if err != nil {
			return
		}
		spans, ok := envelopeSpans(data)
		if !ok {
			return
		}
		fast, _ := replaceSpans(data, spans, func(s span) ([]byte, error) { return markerJSON(s.env), nil })
		got, err := schema.Decode(fast)
		if err != nil {
			t.Fatalf("the scan made invalid JSON of %q: %q", data, fast)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(Redact(doc))
		if string(a) != string(b) {
			t.Fatalf("scan and decode disagree on %q:\n%s\n%s", data, a, b)
		}
	})
}
