//go:build unix

package e2e

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/convergehq/converge/sdk-go/client"
)

// widgetReactions are the reactions and finalizer of every widget version:
// its teardown is recorded by the worker, so a test sees one that ran.
const widgetReactions = `finalizer: e2e.converge.dev/teardown
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
  - {name: teardown, trigger: deleteRequested, emits: [finalizer]}
`

// widgetV1 is widget v1 as first published.
const widgetV1 = `type: manifest
kind: widget
kind_version: 1
owner: e2e
spec_schema:
  type: object
  additionalProperties: false
  required: [size]
  properties:
    size: {type: integer, minimum: 1}
    zone: {type: string, enum: [a, b, c]}
    name: {type: string}
    note: {type: [string, integer]}
    debug: {type: boolean}
    fail: {type: string}
    report: {type: object}
` + widgetReactions

// widgetV1Additive changes widgetV1 only additively: a new optional
// property, a widened bound, an extended enum.
const widgetV1Additive = `type: manifest
kind: widget
kind_version: 1
owner: e2e
spec_schema:
  type: object
  additionalProperties: false
  required: [size]
  properties:
    size: {type: integer, minimum: 0}
    zone: {type: string, enum: [a, b, c, d]}
    name: {type: string}
    note: {type: [string, integer]}
    debug: {type: boolean}
    label: {type: string}
    fail: {type: string}
    report: {type: object}
` + widgetReactions

// widgetV1Breaking breaks widgetV1Additive in six ways; widgetBreaks lists
// the line the gate must print for each.
const widgetV1Breaking = `type: manifest
kind: widget
kind_version: 1
owner: e2e
spec_schema:
  type: object
  additionalProperties: false
  required: [size, label]
  properties:
    size: {type: integer, minimum: 3}
    zone: {type: string, enum: [a, b]}
    name: {type: string, pattern: "^[a-z]+$"}
    note: {type: string}
    label: {type: string}
    fail: {type: string}
    report: {type: object}
` + widgetReactions

var widgetBreaks = []string{
	"spec_schema /debug: removed",
	"spec_schema /note: retyped",
	"spec_schema /size: narrowed",
	"spec_schema /zone: enum-restricted",
	"spec_schema /label: newly-required",
	"spec_schema /name: pattern-added",
}

// widgetV2 is the breaking change shipped as a new version: size is a
// word now.
const widgetV2 = `type: manifest
kind: widget
kind_version: 2
owner: e2e
spec_schema:
  type: object
  additionalProperties: false
  required: [size]
  properties:
    size: {type: string, enum: [small, large]}
    fail: {type: string}
    report: {type: object}
` + widgetReactions

// widgetDoc is a widget resource document.
func widgetDoc(name string, version int, spec string) string {
	return "type: resource\nkind: widget\nkind_version: " + strconv.Itoa(version) + "\nname: " + name + "\nspec: " + spec + "\n"
}

// TestStabilityGate walks a kind version through R-3 with conctl: an
// additive re-apply is accepted, a breaking one is refused naming every
// path and class and changes nothing, a resource moves to v2 in place, a
// retired v1 refuses new resources while its existing ones keep
// reconciling, and a version in use cannot be deleted.
func TestStabilityGate(t *testing.T) {
	begin(t)
	l := startLifecycle(t)
	l.mustApply(widgetV1, "kind widget/v1 created")
	l.mustApply(widgetDoc("w1", 1, "{size: 2}")+"---\n"+widgetDoc("w2", 1, "{size: 4}"),
		"resource default/widget/w1 created", "resource default/widget/w2 created")
	w1 := l.waitSynced("widget", "w1", 1)
	l.waitSynced("widget", "w2", 1)

	// Additive: configured, and the new property is accepted at once.
	l.mustApply(widgetV1Additive, "kind widget/v1 configured")
	l.mustApply(widgetDoc("w2", 1, "{size: 0, zone: d, label: wide}"), "resource default/widget/w2 configured")
	l.waitSynced("widget", "w2", 2)

	// Breaking: refused, every path and class named, nothing changed.
	before := l.mustCtl("get", "kind", "widget/v1", "-o", "json").stdout
	res := l.apply(widgetV1Breaking)
	if res.code == 0 {
		t.Fatalf("a breaking re-apply of widget v1 was accepted:\n%s", res)
	}
	for _, line := range widgetBreaks {
		if !strings.Contains(res.stderr, line) {
			t.Errorf("the refusal of a breaking re-apply does not say %q:\n%s", line, res)
		}
	}
	if !strings.Contains(res.stderr, "6 breaking change(s)") {
		t.Errorf("the refusal does not count 6 breaking changes:\n%s", res)
	}
	if code, msg := postJSON(t, l.srv.url+"/api/v1/kinds", manifestJSON(t, widgetV1Breaking)); code != 409 ||
		!strings.Contains(msg, widgetBreaks[0]) {
		t.Errorf("REST apply of a breaking manifest: %d %q; want 409 listing the breaking changes", code, msg)
	}
	if after := l.mustCtl("get", "kind", "widget/v1", "-o", "json").stdout; after != before {
		t.Errorf("a refused re-apply changed the kind:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// A version move in place: same uid, no teardown, reconciled at v2.
	l.mustApply(widgetV2, "kind widget/v2 created")
	l.mustApply(widgetDoc("w1", 2, "{size: large}"), "resource default/widget/w1 configured")
	moved := l.waitSynced("widget", "w1", 2)
	if moved.GetUid() != w1.GetUid() || moved.GetKindVersion() != 2 || !moved.GetCreatedAt().AsTime().Equal(w1.GetCreatedAt().AsTime()) {
		t.Errorf("widget/w1 after its move to v2: uid %s, v%d, created %s; want uid %s, v2, created %s (the same resource)",
			moved.GetUid(), moved.GetKindVersion(), moved.GetCreatedAt().AsTime(), w1.GetUid(), w1.GetCreatedAt().AsTime())
	}
	if kv, gen, _, _ := seen(t, moved); kv != 2 || gen != 2 {
		t.Errorf("widget/w1's status says the worker saw v%d generation %d; want v2 generation 2", kv, gen)
	}
	for _, r := range l.tasks("widget", "w1", "") {
		if r.Reaction == "teardown" || r.UID != w1.GetUid() {
			t.Errorf("moving widget/w1 to v2 ran %s; want reconciles of uid %s only:\n%s", r, w1.GetUid(), renderLC(l.tasks("widget", "w1", "")))
		}
	}
	// A spec not valid at the new version is refused, and the resource
	// stays where it is.
	res = l.apply(widgetDoc("w2", 2, "{size: 4}"))
	if res.code == 0 || !strings.Contains(res.stderr, "/size: must be string") {
		t.Errorf("moving widget/w2 to v2 with a spec v2 refuses: want a non-zero exit naming /size:\n%s", res)
	}
	if r := l.get("widget/w2"); r.GetKindVersion() != 1 || r.GetGeneration() != 2 {
		t.Errorf("widget/w2 after a refused move: %s at v%d; want v1, generation 2", describe(r), r.GetKindVersion())
	}

	// Retired: no new resources at v1; w2 keeps reconciling there.
	l.mustCtl("kind", "policy", "widget/v1", "--set", "retired=true")
	res = l.apply(widgetDoc("w3", 1, "{size: 1}"))
	if res.code == 0 || !strings.Contains(res.stderr, "retired") {
		t.Errorf("a new resource at retired widget v1: want a non-zero exit saying it is retired:\n%s", res)
	}
	if r, err := tryGetResource(l.srv.api, "widget", "w3"); err != nil || r != nil {
		t.Errorf("a refused resource at a retired version exists: %s (err %v)", explain(r), err)
	}
	l.mustApply(widgetDoc("w2", 1, "{size: 5}"), "resource default/widget/w2 configured")
	if r := l.waitSynced("widget", "w2", 3); r.GetKindVersion() != 1 {
		t.Errorf("widget/w2 reconciled at v%d; want v1", r.GetKindVersion())
	}

	// Deleting a version in use is refused.
	res = l.ctl("delete", "kind", "widget/v1")
	if res.code == 0 || !strings.Contains(res.stderr, "used by 1 resource(s)") {
		t.Errorf("deleting widget v1 while widget/w2 uses it: want a non-zero exit saying it is used by 1 resource:\n%s", res)
	}
	l.mustCtl("get", "kind", "widget/v1")
	if r := l.get("widget/w2"); r.GetPhase() != client.PhaseReady {
		t.Errorf("widget/w2 after the refused delete of its version: %s; want Ready", explain(r))
	}
}

// manifestJSON turns a manifest document into the JSON body of a REST
// apply: the document without its type.
func manifestJSON(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("manifest document: %v\n%s", err, doc)
	}
	delete(m, "type")
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("manifest document: %v\n%s", err, doc)
	}
	return string(raw)
}
