// Package kindcheck exposes two of the server's manifest rules to tools
// outside the server (stdworker's kind generator): whether a manifest is
// legal, and which changes between two manifests of one kind version are
// breaking. Both are the server's own code (manifest.Compile and
// compat.CheckManifest, which server/internal keeps private), so a
// generated kind is judged exactly as applying it would judge it.
package kindcheck

import (
	"github.com/convergehq/converge/server/internal/compat"
	"github.com/convergehq/converge/server/internal/manifest"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Legal returns the server's error for a manifest it would refuse (rules
// M1–M27, schemas compiled), or nil.
func Legal(m *convergev1.KindManifest) error {
	_, err := manifest.Compile(m)
	return err
}

// Breaking lists every breaking change from old to new, as the server's
// schema-stability gate and the catalog check's C6 find them, one
// sentence each: "spec_schema at /a: narrowed: maximum was 10, now 5".
// Empty means new may replace old in place.
func Breaking(old, new *convergev1.KindManifest) ([]string, error) {
	changes, err := compat.CheckManifest(old, new)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		where := c.Field
		if c.Path != "" {
			where += " at " + c.Path
		}
		out = append(out, where+": "+string(c.Reason)+": "+c.Detail)
	}
	return out, nil
}
