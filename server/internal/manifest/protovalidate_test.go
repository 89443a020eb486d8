package manifest

import (
	"testing"

	"buf.build/go/protovalidate"
)

// The manifests the rule tests start from must pass protovalidate, the
// check that runs before Compile, so the tests exercise realistic input.
func TestBaseManifestsPassProtovalidate(t *testing.T) {
	for _, s := range []string{compositeJSON, reactorJSON} {
		if err := protovalidate.Validate(parseManifest(t, s)); err != nil {
			t.Errorf("protovalidate: %v", err)
		}
	}
}
