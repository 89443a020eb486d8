package stdcel

import (
	"context"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

func TestRegisterRefusesUnknownKinds(t *testing.T) {
	p := New()
	w, err := converge.NewWorker("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	err = p.Register(context.Background(), w, provider.Served{Manifest: &convergev1.KindManifest{Kind: "webapp", KindVersion: 1}}, provider.Env{})
	if err == nil || !strings.Contains(err.Error(), "settings {graph: <std.graph resource name>") {
		t.Errorf("want a refusal naming the settings, got %v", err)
	}
	err = p.Register(context.Background(), w, provider.Served{Manifest: &convergev1.KindManifest{Kind: Kind, KindVersion: Version,
		Reactions: []*convergev1.Reaction{{Name: "compile", Trigger: "specChange"}}}}, provider.Env{})
	if err == nil || !strings.Contains(err.Error(), `std.graph v1 has no reaction "teardown"`) {
		t.Errorf("want a refusal naming the missing reaction, got %v", err)
	}
}

func TestManifest(t *testing.T) {
	g := mustCompile(t, webapp)
	m, err := g.Manifest("std.graph/default/webapp")
	if err != nil {
		t.Fatal(err)
	}
	if m.GetKind() != "webapp" || m.GetKindVersion() != 1 || m.GetOwner() != "std.graph/default/webapp" || len(m.GetReactions()) != 2 {
		t.Fatalf("manifest %v", m)
	}
	if d := m.GetSpecSchema().GetFields()["properties"].GetStructValue().GetFields()["replicas"].GetStructValue().GetFields()["default"]; d.GetNumberValue() != 2 {
		t.Errorf("spec_schema lost the default: %v", m.GetSpecSchema())
	}
	// The status schema is derived from the projection: url and database are strings.
	props := m.GetStatusSchema().GetFields()["properties"].GetStructValue().GetFields()
	if props["url"].GetStructValue().GetFields()["type"].GetStringValue() != "string" || props["database"] == nil {
		t.Errorf("status_schema %v", m.GetStatusSchema())
	}
}
