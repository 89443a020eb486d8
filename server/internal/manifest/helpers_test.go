package manifest

import (
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// compositeJSON is a legal manifest that uses every role except reactor.
const compositeJSON = `{
  "kind": "db.cluster",
  "kind_version": 1,
  "description": "A database cluster.",
  "owner": "data-platform",
  "spec_schema": {"type": "object", "required": ["replicas"], "properties": {"replicas": {"type": "integer", "minimum": 1}}},
  "status_schema": {"type": "object", "properties": {"endpoint": {"type": "string"}}},
  "config_schema": {"type": "object", "properties": {"region": {"type": "string"}}},
  "reactions": [
    {"name": "compose", "trigger": "specChange", "emits": ["children", "edges", "status"]},
    {"name": "rollup", "trigger": "childrenSettled", "emits": ["status", "conditions"]},
    {"name": "teardown", "trigger": "deleteRequested", "emits": ["finalizer"]},
    {"name": "restart", "trigger": "operation", "verb": "restart", "emits": ["operationOutput"]},
    {"name": "observe", "trigger": "resync", "emits": ["status", "conditions"]}
  ],
  "policy": {"resync_interval_seconds": 60, "max_inflight": 4},
  "finalizer": "db.cluster/cleanup",
  "operations": [{"verb": "restart", "input_schema": {"type": "object", "properties": {"force": {"type": "boolean"}}}}]
}`

// reactorJSON is a legal reactor kind.
const reactorJSON = `{
  "kind": "audit.hook",
  "kind_version": 2,
  "reactions": [{"name": "notify", "trigger": "reactor", "emits": ["sideEffect"]}]
}`

func parseManifest(t testing.TB, s string) *convergev1.KindManifest {
	t.Helper()
	m := &convergev1.KindManifest{}
	if err := protojson.Unmarshal([]byte(s), m); err != nil {
		t.Fatalf("parse manifest: %v", err)
	}
	return m
}

func mustStruct(t testing.TB, v map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(v)
	if err != nil {
		t.Fatalf("structpb.NewStruct: %v", err)
	}
	return s
}

func stringValue(s string) *structpb.Value  { return structpb.NewStringValue(s) }
func numberValue(f float64) *structpb.Value { return structpb.NewNumberValue(f) }
func nan() float64                          { return math.NaN() }
