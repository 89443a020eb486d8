package api

import (
	"fmt"
	"strings"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/compat"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/store"
)

// breakingError lists the breaking changes an apply of an existing kind
// version would make. The API answers it with 409.
type breakingError struct {
	kind    string
	version int32
	changes []compat.Change
}

func (e *breakingError) Error() string {
	lines := make([]string, len(e.changes))
	for i, c := range e.changes {
		lines[i] = c.String()
	}
	return fmt.Sprintf("kind %s v%d already exists and this manifest would break it (%d breaking change(s)); "+
		"make the change additive, or publish it as a new kind version:\n  %s",
		e.kind, e.version, len(e.changes), strings.Join(lines, "\n  "))
}

// stabilityGate refuses a manifest that would break the stored kind
// version: anything a resource, a status, a config or an operation input
// valid under the stored schemas must stay valid.
func stabilityGate(prev store.Kind, next *convergev1.KindManifest) error {
	old, err := manifest.FromCanonical(prev.Manifest)
	if err != nil {
		return fmt.Errorf("reading the stored manifest of %s v%d: %w", prev.Kind, prev.Version, err)
	}
	changes, err := compat.CheckManifest(old, next)
	if err != nil {
		return invalid("manifest: %v", err)
	}
	if len(changes) == 0 {
		return nil
	}
	return &breakingError{kind: prev.Kind, version: prev.Version, changes: changes}
}
