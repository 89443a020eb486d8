package manifest

import (
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/trigger"
)

func FuzzCompile(f *testing.F) {
	f.Add([]byte(compositeJSON))
	f.Add([]byte(reactorJSON))
	f.Add([]byte(`{"kind":"x","reactions":[{"name":"a","trigger":"operation"},{"name":"a","trigger":"childrenSettled","emits":["children","edges"]}],"operations":[{"verb":""},{"verb":""}],"finalizer":"f"}`))
	f.Add([]byte(`{"spec_schema":{"$ref":"#/$defs/x","$defs":{"x":{"$ref":"#/$defs/x"}}},"status_schema":{"type":["object",1]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m := &convergev1.KindManifest{}
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, m); err != nil {
			return
		}
		k, err := Compile(m)
		if err != nil {
			_ = err.Error()
		} else {
			_, _ = k.Reaction(trigger.SpecChange)
			_ = k.IsComposite()
		}
		if c, err := Canonical(m); err == nil {
			if _, err := FromCanonical(c); err != nil {
				t.Fatalf("FromCanonical(Canonical(m)) = %v", err)
			}
		}
	})
}
