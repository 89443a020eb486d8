package stdterraform

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	std "github.com/convergehq/converge/catalog/std"
	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

// catalogManifest reads the std.terraform manifest stdworker ships.
func catalogManifest(t *testing.T) *convergev1.KindManifest {
	t.Helper()
	raw, err := std.FS.ReadFile("std.terraform/v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "type")
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var m convergev1.KindManifest
	if err := protojson.Unmarshal(js, &m); err != nil {
		t.Fatalf("the catalog manifest: %v", err)
	}
	return &m
}

func TestRegisterServesTheCatalogManifest(t *testing.T) {
	m := catalogManifest(t)
	dir := t.TempDir()
	w, err := converge.NewWorker("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := New().Register(context.Background(), w, provider.Served{Manifest: m}, provider.Env{StateDir: dir}); err != nil {
		t.Fatalf("Register: %v", err)
	}
	rc, err := os.ReadFile(filepath.Join(dir, Name, cliConfigName))
	if err != nil || !strings.Contains(string(rc), "disable_checkpoint = true") || !strings.Contains(string(rc), "plugin_cache_dir") {
		t.Errorf("CLI configuration %q, %v", rc, err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	reaction := func(name, trigger string, emits ...string) *convergev1.Reaction {
		return &convergev1.Reaction{Name: name, Trigger: trigger, Emits: emits}
	}
	cases := []struct {
		name      string
		reactions []*convergev1.Reaction
		settings  string
		want      string
	}{
		{"operation", []*convergev1.Reaction{reaction("apply", "specChange", "status"), reaction("plan", "operation", "operationOutput")}, "", `reaction "plan": trigger operation is not served`},
		{"composer", []*convergev1.Reaction{reaction("apply", "specChange", "children")}, "", `reaction "apply" emits children`},
		{"no status", []*convergev1.Reaction{reaction("apply", "specChange", "conditions")}, "", `reaction "apply" must emit status`},
		{"nothing", nil, "", "no specChange reaction"},
		{"bad settings", []*convergev1.Reaction{reaction("apply", "specChange", "status")}, `{"backend":{"type":"s3"}}`, `settings.backend.type: "s3"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := &convergev1.KindManifest{Kind: "infra.module", KindVersion: 2, Reactions: tc.reactions}
			w, err := converge.NewWorker("http://127.0.0.1:1")
			if err != nil {
				t.Fatal(err)
			}
			err = New().Register(context.Background(), w, provider.Served{Manifest: m, Settings: json.RawMessage(tc.settings)}, provider.Env{StateDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), "stdterraform infra.module@2: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming the kind and containing %q", err, tc.want)
			}
		})
	}
}
