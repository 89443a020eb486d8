package testkit

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/store"
)

// ApplyKind checks and stores a kind manifest the way the API does and
// returns the stored row, so a kinds registry loading it compiles it.
func ApplyKind(t testing.TB, st *store.Store, m *convergev1.KindManifest) store.Kind {
	t.Helper()
	if _, err := manifest.Compile(m); err != nil {
		t.Fatalf("kind %s v%d: %v", m.GetKind(), m.GetKindVersion(), err)
	}
	stored := proto.CloneOf(m)
	stored.Policy = nil // stored in columns of its own
	canonical, err := manifest.Canonical(stored)
	if err != nil {
		t.Fatal(err)
	}
	k := store.Kind{Kind: m.GetKind(), Version: m.GetKindVersion(), Manifest: canonical, Policy: kinds.PolicyFromProto(m.GetPolicy())}
	e, err := kinds.Compile(k)
	if err != nil {
		t.Fatalf("kind %s v%d: %v", m.GetKind(), m.GetKindVersion(), err)
	}
	k.ResyncEvery = e.ResyncInterval()
	row, _, err := st.ApplyKind(context.Background(), k, nil)
	if err != nil {
		t.Fatalf("applying kind %s v%d: %v", m.GetKind(), m.GetKindVersion(), err)
	}
	return row
}

// Schema builds a JSON schema (or any structpb value) from a Go map.
func Schema(t testing.TB, v map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Object is the schema of any JSON object.
func Object(t testing.TB) *structpb.Struct { return Schema(t, map[string]any{"type": "object"}) }
