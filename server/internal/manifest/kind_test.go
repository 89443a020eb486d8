package manifest

import (
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/trigger"
)

func TestKindAccessors(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	m.Revision = 7
	k, err := Compile(m)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if k.Kind != "db.cluster" || k.Version != 1 || k.Revision != 7 {
		t.Errorf("identity = %s v%d rev %d, want db.cluster v1 rev 7", k.Kind, k.Version, k.Revision)
	}
	if !k.IsComposite() || k.IsReactor() {
		t.Errorf("IsComposite = %v, IsReactor = %v; want true, false", k.IsComposite(), k.IsReactor())
	}
	for trigger, name := range map[string]string{
		trigger.SpecChange:      "compose",
		trigger.ChildrenSettled: "rollup",
		trigger.DeleteRequested: "teardown",
		trigger.Resync:          "observe",
	} {
		r, ok := k.Reaction(trigger)
		if !ok || r.GetName() != name {
			t.Errorf("Reaction(%s) = %q, %v; want %q", trigger, r.GetName(), ok, name)
		}
	}
	if r, ok := k.Reaction(trigger.Operation); ok {
		t.Errorf("Reaction(operation) = %q, want none: operations are looked up by verb", r.GetName())
	}
	if r, ok := k.OperationReaction("restart"); !ok || r.GetName() != "restart" {
		t.Errorf("OperationReaction(restart) = %q, %v", r.GetName(), ok)
	}
	if _, ok := k.OperationReaction("stop"); ok {
		t.Error("OperationReaction(stop) found an undeclared verb")
	}

	if err := k.Spec.Validate(map[string]any{"replicas": 0.0}); err == nil || err.Error() != "/replicas: must be >= 1" {
		t.Errorf("Spec.Validate(replicas: 0) = %v, want /replicas: must be >= 1", err)
	}
	if err := k.Status.Validate(map[string]any{"endpoint": 5.0}); err == nil {
		t.Error("Status.Validate accepted a numeric endpoint")
	}
	if err := k.Config.Validate(map[string]any{"region": "eu"}); err != nil {
		t.Errorf("Config.Validate = %v", err)
	}
	in, ok := k.OperationInput("restart")
	if !ok || in == nil {
		t.Fatalf("OperationInput(restart) = %v, %v; want a schema", in, ok)
	}
	if err := in.Validate(map[string]any{"force": "yes"}); err == nil {
		t.Error("restart input accepted force: \"yes\"")
	}
	if _, ok := k.OperationInput("stop"); ok {
		t.Error("OperationInput(stop) found an undeclared verb")
	}
}

func TestKindWithoutSchemasAcceptsAnything(t *testing.T) {
	m := parseManifest(t, reactorJSON)
	k, err := Compile(m)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if k.Spec != nil || k.Status != nil || k.Config != nil {
		t.Fatal("absent schemas compiled to non-nil")
	}
	if err := k.Spec.Validate(map[string]any{"x": 1.0}); err != nil {
		t.Errorf("nil Spec rejected a spec: %v", err)
	}
	if !k.IsReactor() || k.IsComposite() {
		t.Errorf("IsReactor = %v, IsComposite = %v; want true, false", k.IsReactor(), k.IsComposite())
	}
}

func TestPolicyDefaults(t *testing.T) {
	k, err := Compile(parseManifest(t, reactorJSON))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Policy{TaskDeadline: DefaultTaskDeadline}); k.Policy != want {
		t.Errorf("Policy = %+v, want %+v", k.Policy, want)
	}
	if DefaultTaskDeadline != 300*time.Second {
		t.Errorf("DefaultTaskDeadline = %v, want 300s", DefaultTaskDeadline)
	}

	m := parseManifest(t, compositeJSON)
	m.Policy.TaskDeadlineSeconds = 30
	m.Policy.OrphanGraceSeconds = 600
	m.Policy.MaxTransientAttempts = 5
	m.Policy.ResyncRecomposes = true
	m.Policy.Retired = true
	k, err = Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{
		MaxInflight:          4,
		TaskDeadline:         30 * time.Second,
		ResyncInterval:       60 * time.Second,
		ResyncRecomposes:     true,
		OrphanGrace:          10 * time.Minute,
		MaxTransientAttempts: 5,
		Retired:              true,
	}
	if k.Policy != want {
		t.Errorf("Policy = %+v, want %+v", k.Policy, want)
	}
}

func TestCompileCopiesTheManifest(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	k, err := Compile(m)
	if err != nil {
		t.Fatal(err)
	}
	m.Reactions[0].Name = "changed"
	m.Kind = "changed"
	if r, _ := k.Reaction(trigger.SpecChange); r.GetName() != "compose" || k.Manifest.GetKind() != "db.cluster" {
		t.Error("changing the caller's manifest changed the compiled Kind")
	}
}
