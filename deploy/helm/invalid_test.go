package helm_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaRejectsInvalidValues renders testdata/invalid/*.yaml, each of which values.schema.json
// must reject, and checks the error names the offending value.
func TestSchemaRejectsInvalidValues(t *testing.T) {
	cases := map[string]string{
		"unknown-key.yaml": "replicas",
		"bad-mode.yaml":    "/mode",
		"bad-port.yaml":    "/server/port",
		"bad-spiffe.yaml":  "/tls/spiffe/apiIDs",
		"bad-url.yaml":     "/database/url",
	}
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) != len(cases) {
		t.Fatalf("testdata/invalid has %d files (%v), want %d", len(files), err, len(cases))
	}
	for _, f := range files {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			want, ok := cases[base]
			if !ok {
				t.Fatalf("no expectation for %s", base)
			}
			_, err := renderValues(t, readValues(t, filepath.Join("invalid", base)))
			if err == nil {
				t.Fatalf("%s rendered; the schema should reject it", base)
			}
			if !strings.Contains(err.Error(), "schema") || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not name %q as a schema violation", base, err, want)
			}
		})
	}
}

// TestTemplateRejectsContradictions covers rules a schema cannot express across fields.
func TestTemplateRejectsContradictions(t *testing.T) {
	cases := []struct {
		name string
		vals map[string]any
		want string
	}{
		{"no database", map[string]any{}, "set database.url or database.existingSecret.name"},
		{"two databases", map[string]any{"database": map[string]any{
			"url": "postgres://db/c", "existingSecret": map[string]any{"name": "s"}}}, "not both"},
		{"tls without secret", map[string]any{"database": map[string]any{"url": "postgres://db/c"},
			"tls": map[string]any{"enabled": true}}, "tls.secretName"},
		{"servicemonitor without metrics", map[string]any{"database": map[string]any{"url": "postgres://db/c"},
			"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}}, "metrics.serviceMonitor.enabled"},
		{"stdworker tls without secret", map[string]any{"database": map[string]any{"url": "postgres://db/c"},
			"tls":       map[string]any{"enabled": true, "secretName": "t"},
			"stdWorker": map[string]any{"enabled": true}}, "stdWorker.tlsSecretName"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderValues(t, tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %q", err, tc.want)
			}
		})
	}
}
