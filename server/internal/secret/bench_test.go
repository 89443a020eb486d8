package secret

import (
	"testing"

	"github.com/convergehq/converge/server/internal/schema"
)

// BenchmarkSealOpen: what one reconcile of W1's secret variant adds per
// document: sealing at the door, opening into the task, redacting on read.
func BenchmarkSealOpen(b *testing.B) {
	k := mustOpen(&testing.T{}, &memKeys{}, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	spec := []byte(`{"i":12345,"password":"pw-0012345-0123456789abcdef"}`)
	paths := []schema.SecretPath{{"password"}}
	sealed, err := k.SealJSON(spec, paths)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("seal", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.SealJSON(spec, paths); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.OpenJSON(b.Context(), sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redact", func(b *testing.B) {
		for b.Loop() {
			RedactJSON(sealed)
		}
	})
}
