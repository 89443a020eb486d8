package rollout

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/convergehq/converge/server/internal/conversion"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/store"
)

// Move is one resource to re-apply at another version with a new spec,
// keeping its labels, provider config and deletion policy.
type Move struct {
	Namespace, Kind, Name string
	ToVersion             int32
	// Spec is the JSON object to apply.
	Spec                           []byte
	Labels                         []byte
	ProviderConfig, DeletionPolicy string
}

// Moved is what became of one Move: the generation it is at now, or why
// it was refused.
type Moved struct {
	Generation int64
	Err        error
}

// Mover applies moves through the same path as an apply: each is
// validated against its kind version, and a refused one does not hold
// the others back. It runs in ctx's transaction (store.Atomic).
type Mover interface {
	MoveResources(ctx context.Context, source, actor string, moves []Move) ([]Moved, error)
}

// Converter returns the conversion from version from to version to of a
// kind, as registered now: nil (with no error) when to declares none, so
// specs move unchanged and must be valid at to as they are.
func Converter(reg *kinds.Registry, kind string, from, to int32) (*conversion.Conversion, error) {
	target := reg.Get(kind, to)
	if target == nil {
		return nil, fmt.Errorf("kind %s v%d is not registered", kind, to)
	}
	source := reg.Get(kind, from)
	if source == nil {
		return nil, fmt.Errorf("kind %s v%d is not registered", kind, from)
	}
	c := target.Compiled.Manifest.GetConversion()
	if c == nil {
		return nil, nil
	}
	if got := conversion.FromVersion(c.GetFromVersion(), to); got != from {
		return nil, fmt.Errorf("the conversion of kind %s v%d converts from v%d, not v%d", kind, to, got, from)
	}
	return conversion.Compile(from, to, c.GetExpr(), source.Compiled.Manifest.GetSpecSchema().AsMap(),
		target.Compiled.Manifest.GetSpecSchema().AsMap())
}

// convert is the spec member m gets at the new version.
func convert(c *conversion.Conversion, m store.RolloutMember) ([]byte, error) {
	if c == nil {
		return m.Spec, nil
	}
	var spec map[string]any
	if err := decodeJSON(m.Spec, &spec); err != nil {
		return nil, err
	}
	out, err := c.Convert(spec)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}
