package helm_test

import (
	"strings"
	"testing"
)

// TestSchemaRejectsInvalidValues renders each schema rejection in rejectedSets (every file under
// testdata/invalid among them), which values.schema.json must reject, and checks the error
// names the offending value.
func TestSchemaRejectsInvalidValues(t *testing.T) {
	for _, f := range testdataFiles(t) {
		if strings.HasPrefix(f, "invalid/") && !lookupRejected(t, f).schema {
			t.Errorf("testdata/%s is not marked as a schema rejection in rejectedSets", f)
		}
	}
	for _, rs := range rejectedSets {
		if rs.schema {
			t.Run(rs.name, func(t *testing.T) { checkRejected(t, rs.name) })
		}
	}
}

// TestTemplateRejectsContradictions covers rules a schema cannot express across fields: each
// template rejection in rejectedSets.
func TestTemplateRejectsContradictions(t *testing.T) {
	for _, rs := range rejectedSets {
		if !rs.schema {
			t.Run(rs.name, func(t *testing.T) { checkRejected(t, rs.name) })
		}
	}
}
