package stdcel

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// testKinds are the leaf kinds the tests' graphs use.
var testKinds = map[string]string{
	"demo.database@1": `{
		"spec": {"type": "object", "required": ["engine"], "additionalProperties": false, "properties": {
			"engine": {"type": "string"}, "size": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}}},
		"status": {"type": "object", "properties": {
			"host": {"type": "string"}, "port": {"type": "integer"}, "ready": {"type": "boolean"}}}}`,
	"demo.service@1": `{
		"spec": {"type": "object", "required": ["image", "database_url"], "additionalProperties": false, "properties": {
			"image": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}, "database_url": {"type": "string"},
			"port": {"type": "integer"}, "region": {"type": "string"}}},
		"status": {"type": "object", "properties": {"url": {"type": "string"}, "replicas": {"type": "integer"}}}}`,
}

func testLookup(_ context.Context, kind string, version int) (*KindSchemas, error) {
	raw, ok := testKinds[fmt.Sprintf("%s@%d", kind, version)]
	if !ok {
		return nil, ErrUnknownKind
	}
	var ks KindSchemas
	if err := json.Unmarshal([]byte(raw), &ks); err != nil {
		return nil, err
	}
	return &ks, nil
}

// webapp is a graph whose service reads its database's status.
const webapp = `{
  "kind": "webapp", "version": 1,
  "spec_schema": {"type": "object", "required": ["image"], "properties": {
     "image": {"type": "string"}, "replicas": {"type": "integer", "default": 2},
     "withCache": {"type": "boolean", "default": false}, "regions": {"type": "array", "items": {"type": "string"}}}},
  "resources": [
    {"id": "db", "kind": "demo.database", "version": 1,
     "template": {"spec": {"engine": "postgres", "size": "${schema.spec.replicas * 10}"}},
     "readyWhen": ["${db.status.ready}"]},
    {"id": "app", "kind": "demo.service", "version": 1,
     "template": {"spec": {"image": "${schema.spec.image}", "replicas": "${schema.spec.replicas}",
        "database_url": "postgres://${db.status.host}:${db.status.port}/${schema.metadata.name}"}}}
  ],
  "status": {"url": "${app.status.url}", "database": "${db.status.host}"}
}`

func mustCompile(t *testing.T, src string) *Graph {
	t.Helper()
	def, err := DecodeDefinition([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g, err := Compile(context.Background(), def, testLookup)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return g
}

func compileProblems(t *testing.T, src string) []Problem {
	t.Helper()
	def, err := DecodeDefinition([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(context.Background(), def, testLookup)
	ce, ok := err.(*CheckError)
	if !ok {
		t.Fatalf("Compile = %v, want a *CheckError", err)
	}
	return ce.Problems
}
