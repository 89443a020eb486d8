//go:build unix

package e2e

import (
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The specworker's kinds (testdata/specworker), all at version 1.
const (
	// kindStack is a composite whose spec (compositeDoc) lists its
	// children and edges.
	kindStack = "stack"
	// kindGraced is a stack whose kind keeps a dropped child graceSeconds.
	kindGraced = "graced"
	// kindSummary is a stack with a childrenSettled reaction that adds
	// the rollup it is given to its status, as status.settled.
	kindSummary = "summary"
	// kindPart is a leaf reporting the status its spec asks for (leafSpec).
	kindPart = "part"
	// kindFin is a part with a finalizer: its teardown runs on deletion
	// and is recorded by the worker's -record.
	kindFin = "fin"
	// kindInert is a leaf no worker serves: its resources stay queued,
	// which keeps large child sets cheap.
	kindInert = "inert"

	graceSeconds = 3
)

// applySpecKinds applies every kind the specworker serves.
func applySpecKinds(t *testing.T, c *client.Client) {
	t.Helper()
	for _, m := range specKinds(t) {
		applyKind(t, c, m)
	}
}

// specKinds are the manifests of the specworker's kinds. The schemas are
// closed, so a test that misspells a field is refused at the door.
func specKinds(t *testing.T) []*convergev1.KindManifest {
	t.Helper()
	object := func(props map[string]any, required ...string) map[string]any {
		o := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
		if len(required) > 0 {
			req := make([]any, len(required))
			for i, r := range required {
				req[i] = r
			}
			o["required"] = req
		}
		return o
	}
	str := map[string]any{"type": "string"}
	integer := map[string]any{"type": "integer"}
	boolean := map[string]any{"type": "boolean"}
	list := func(items map[string]any) map[string]any { return map[string]any{"type": "array", "items": items} }

	compositeSpec := object(map[string]any{
		"children": list(object(map[string]any{"kind": str, "name": str, "spec": map[string]any{"type": "object"}}, "kind", "name")),
		"edges": list(object(map[string]any{"dependent": str, "dependency": str,
			"flows": list(object(map[string]any{"from": str, "expr": str, "to": str}, "to"))}, "dependent", "dependency")),
		"bulk": object(map[string]any{"kind": str, "count": map[string]any{"type": "integer", "minimum": 0}}, "kind", "count"),
	})
	compositeStatus := object(map[string]any{"children": integer})
	summaryStatus := object(map[string]any{"children": integer, "settled": object(map[string]any{
		"total": integer, "ready": integer, "reconciling": integer, "degraded": integer, "failed": integer})})
	leafSpec := object(map[string]any{"id": str, "omit_id": boolean, "upstream": str, "unhealthy": boolean, "fail": str})
	leafStatus := object(map[string]any{"id": str, "upstream": str})

	compose := &convergev1.Reaction{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges", "status"}}
	reconcile := &convergev1.Reaction{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}
	manifest := func(kind string, spec, status map[string]any, reactions ...*convergev1.Reaction) *convergev1.KindManifest {
		m := &convergev1.KindManifest{Kind: kind, KindVersion: 1, Owner: "e2e", SpecSchema: mustStruct(t, spec), Reactions: reactions}
		if status != nil {
			m.StatusSchema = mustStruct(t, status)
		}
		return m
	}

	graced := manifest(kindGraced, compositeSpec, compositeStatus, compose)
	graced.Policy = &convergev1.KindPolicy{OrphanGraceSeconds: graceSeconds}
	fin := manifest(kindFin, leafSpec, leafStatus, reconcile,
		&convergev1.Reaction{Name: "teardown", Trigger: "deleteRequested", Emits: []string{"finalizer"}})
	fin.Finalizer = "e2e.converge.dev/teardown"
	return []*convergev1.KindManifest{
		manifest(kindStack, compositeSpec, compositeStatus, compose),
		graced,
		manifest(kindSummary, compositeSpec, summaryStatus, compose,
			&convergev1.Reaction{Name: "summarize", Trigger: "childrenSettled", Emits: []string{"status"}}),
		manifest(kindPart, leafSpec, leafStatus, reconcile),
		fin,
		manifest(kindInert, map[string]any{"type": "object"}, nil, reconcile),
	}
}
