package manifest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/trigger"
)

func reaction(name, trigger string, emits ...string) *convergev1.Reaction {
	return &convergev1.Reaction{Name: name, Trigger: trigger, Emits: emits}
}

// TestRules mutates a legal manifest in one way per case and expects
// exactly one problem: the rule and field the mutation breaks.
func TestRules(t *testing.T) {
	tests := []struct {
		name   string
		base   string
		mutate func(t *testing.T, m *convergev1.KindManifest)
		rule   Rule
		field  string
	}{
		{"duplicate reaction name", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[1].Name = "compose"
		}, RuleUniqueReactionNames, "reactions[1].name"},
		{"second specChange", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions = append(m.Reactions, reaction("leaf", trigger.SpecChange, EmitStatus))
		}, RuleOneReactionPerTrigger, "reactions[5].trigger"},
		{"second reaction for one verb", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			r := reaction("restart2", trigger.Operation, EmitOperationOutput)
			r.Verb = "restart"
			m.Reactions = append(m.Reactions, r)
		}, RuleOneReactionPerTrigger, "reactions[5].verb"},
		{"no specChange", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions = m.Reactions[2:]
		}, RuleSpecChangeRequired, "reactions"},
		{"no reactions at all", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions, m.Finalizer, m.Operations = nil, "", nil
		}, RuleSpecChangeRequired, "reactions"},
		{"deleteRequested without finalizer", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Finalizer = ""
		}, RuleDeleteNeedsFinalizer, "reactions[2]"},
		{"deleteRequested not emitting finalizer", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[2].Emits = []string{EmitStatus}
		}, RuleDeleteEmitsFinalizer, "reactions[2].emits"},
		{"finalizer without deleteRequested", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions = slices.Delete(m.Reactions, 2, 3)
		}, RuleFinalizerNeedsDelete, "finalizer"},
		{"specChange emitting finalizer", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Emits = append(m.Reactions[0].Emits, EmitFinalizer)
		}, RuleFinalizerOnlyFromDelete, "reactions[0].emits"},
		{"resync emitting children without resync_recomposes", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[4].Emits = append(m.Reactions[4].Emits, EmitChildren)
		}, RuleChildrenOnlyFromSpecChange, "reactions[4].emits"},
		{"deleteRequested emitting configs", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[2].Emits = append(m.Reactions[2].Emits, EmitConfigs)
		}, RuleChildrenOnlyFromSpecChange, "reactions[2].emits"},
		{"edges without children", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Policy.ResyncRecomposes = true
			m.Reactions[4].Emits = []string{EmitConfigs, EmitStatus}
		}, RuleEdgesNeedChildren, "reactions[4].emits"},
		{"specChange emitting neither status nor children", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Emits = []string{EmitConditions}
			m.Reactions = slices.Delete(m.Reactions, 1, 2)
		}, RuleSpecChangeEmitsResult, "reactions[0].emits"},
		{"childrenSettled without composer", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Emits = []string{EmitStatus}
		}, RuleSettledNeedsComposer, "reactions[1]"},
		{"childrenSettled emitting children", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[1].Emits = append(m.Reactions[1].Emits, EmitChildren)
		}, RuleSettledEmitsStatusOnly, "reactions[1].emits"},
		{"childrenSettled emitting sideEffect", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[1].Emits = append(m.Reactions[1].Emits, EmitSideEffect)
		}, RuleSettledEmitsStatusOnly, "reactions[1].emits"},
		{"operation without verb", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[3].Verb = ""
			m.Operations = nil
		}, RuleOperationNeedsVerb, "reactions[3].verb"},
		{"operation verb not declared", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[3].Verb = "reboot"
			m.Operations = nil
		}, RuleVerbDeclared, "reactions[3].verb"},
		{"declared operation without reaction", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Operations = append(m.Operations, &convergev1.OperationDecl{Verb: "resize"})
		}, RuleOperationServed, "operations[1].verb"},
		{"specChange emitting operationOutput", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Emits = append(m.Reactions[0].Emits, EmitOperationOutput)
		}, RuleOutputOnlyFromOperation, "reactions[0].emits"},
		{"reactor emitting status", reactorJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Emits = append(m.Reactions[0].Emits, EmitStatus)
		}, RuleReactorEmitsSideEffectOnly, "reactions[0].emits"},
		{"reactor kind with another reaction", reactorJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions = append(m.Reactions, reaction("leaf", trigger.SpecChange, EmitStatus))
		}, RuleReactorKindAlone, "reactions[1]"},
		{"specChange emitting sideEffect", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Emits = append(m.Reactions[0].Emits, EmitSideEffect)
		}, RuleSideEffectOnlyFromReactor, "reactions[0].emits"},
		{"resync without interval", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Policy.ResyncIntervalSeconds = 0
		}, RuleResyncNeedsInterval, "reactions[4]"},
		{"resync without policy", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Policy = nil
		}, RuleResyncNeedsInterval, "reactions[4]"},
		{"verb on a specChange reaction", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions[0].Verb = "restart"
		}, RuleVerbOnlyOnOperation, "reactions[0].verb"},
		{"duplicate operation verb", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Operations = append(m.Operations, &convergev1.OperationDecl{Verb: "restart"})
		}, RuleUniqueOperationVerbs, "operations[1].verb"},
		{"spec schema does not compile", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.SpecSchema.Fields["properties"].GetStructValue().Fields["replicas"].GetStructValue().Fields["type"] = stringValue("int")
		}, RuleSchemaCompiles, "spec_schema/properties/replicas/type"},
		{"config schema with an external ref", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.ConfigSchema = mustStruct(t, map[string]any{"$ref": "https://example.com/config.json"})
		}, RuleSchemaCompiles, "config_schema/$ref"},
		{"operation input schema does not compile", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Operations[0].InputSchema = mustStruct(t, map[string]any{"minimum": "one"})
		}, RuleSchemaCompiles, "operations[0].input_schema/minimum"},
		{"status schema with a NaN", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.StatusSchema = mustStruct(t, map[string]any{"maximum": 0.0})
			m.StatusSchema.Fields["maximum"] = numberValue(nan())
		}, RuleSchemaCompiles, "status_schema/maximum"},
		{"spec schema describing an array", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.SpecSchema = mustStruct(t, map[string]any{"type": "array"})
		}, RuleSchemaDescribesObject, "spec_schema/type"},
		{"status schema describing strings or numbers", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.StatusSchema = mustStruct(t, map[string]any{"type": []any{"string", "number"}})
		}, RuleSchemaDescribesObject, "status_schema/type"},
		{"observe emitting children", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Reactions = append(m.Reactions, reaction("look", trigger.Observe, EmitStatus, EmitChildren))
		}, RuleObserveEmitsStatusOnly, "reactions[5].emits"},
		{"observe policy without an observe reaction", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.Policy.ManagementPolicy = trigger.PolicyObserve
		}, RuleObservePolicyNeedsReaction, "policy.management_policy"},
		{"secret status property with a default", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.StatusSchema = mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{
				"password": map[string]any{"type": "string", "writeOnly": true, "default": "hunter2"}}})
		}, RuleSecretNotPublished, "status_schema/properties/password/default"},
		{"secret config property with examples", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.ConfigSchema = mustStruct(t, map[string]any{"type": "object", "$defs": map[string]any{
				"token": map[string]any{"type": "string", "x-converge-secret": true, "examples": []any{"abc"}}},
				"properties": map[string]any{"api": map[string]any{"$ref": "#/$defs/token"}}})
		}, RuleSecretNotPublished, "config_schema/$defs/token/examples"},
		{"secret spec item with an enum", compositeJSON, func(t *testing.T, m *convergev1.KindManifest) {
			m.SpecSchema = mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{
				"keys": map[string]any{"type": "array", "items": map[string]any{"type": "string", "writeOnly": true, "enum": []any{"a", "b"}}}}})
		}, RuleSecretNotPublished, "spec_schema/properties/keys/items/enum"},
	}
	covered := map[Rule]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := parseManifest(t, tt.base)
			tt.mutate(t, m)
			_, err := Compile(m)
			var me *Error
			if !errors.As(err, &me) {
				t.Fatalf("Compile error = %v (%T), want *Error", err, err)
			}
			if len(me.Problems) != 1 {
				t.Fatalf("got %d problems, want exactly one (%s at %s):\n%v", len(me.Problems), tt.rule, tt.field, err)
			}
			p := me.Problems[0]
			if p.Rule != tt.rule || p.Field != tt.field {
				t.Errorf("problem = %s at %q, want %s at %q\n%v", p.Rule, p.Field, tt.rule, tt.field, err)
			}
			if p.Message == "" || strings.Contains(p.Message, "%!") {
				t.Errorf("bad message %q", p.Message)
			}
			if strings.HasPrefix(p.Field, "reactions[") && p.Field != "reactions" && p.Reaction == "" {
				t.Errorf("problem at %s does not name its reaction", p.Field)
			}
		})
		covered[tt.rule] = true
	}
	for _, r := range Rules() {
		if !covered[r] {
			t.Errorf("rule %s (%s) has no test case", r, r.Summary())
		}
	}
}

func TestBaseManifestsAreLegal(t *testing.T) {
	for _, s := range []string{compositeJSON, reactorJSON} {
		if _, err := Compile(parseManifest(t, s)); err != nil {
			t.Errorf("Compile = %v, want a legal manifest", err)
		}
	}
}

func TestResyncMayComposeWhenPolicySaysSo(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	m.Policy.ResyncRecomposes = true
	m.Reactions[4].Emits = []string{EmitChildren, EmitEdges, EmitConfigs, EmitStatus}
	if _, err := Compile(m); err != nil {
		t.Errorf("Compile = %v, want resync to compose with resync_recomposes", err)
	}
}

func TestEveryProblemIsReported(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	m.Finalizer = ""                                                    // M4 on teardown
	m.Reactions[1].Name = "compose"                                     // M1
	m.Reactions[0].Emits = append(m.Reactions[0].Emits, EmitSideEffect) // M19
	m.Operations = append(m.Operations, &convergev1.OperationDecl{Verb: "resize"})
	m.SpecSchema = mustStruct(t, map[string]any{"type": "array", "minItems": -1}) // M23 only: M24 needs a compiled schema
	_, err := Compile(m)
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("Compile error = %v, want *Error", err)
	}
	want := `operations[1].verb: M15: operation "resize" has no reaction; add a reaction with trigger operation and verb "resize"
reactions[0].emits "compose": M19: only a reactor reaction may emit sideEffect
reactions[1].name "compose": M1: name "compose" is already used by reactions[0]
reactions[2] "teardown": M4: deleteRequested needs the manifest's finalizer
spec_schema/minItems: M23: must be >= 0`
	if got := err.Error(); got != want {
		t.Errorf("Error() =\n%s\nwant\n%s", got, want)
	}
	if !me.Has(RuleDeleteNeedsFinalizer) || me.Has(RuleSchemaDescribesObject) {
		t.Errorf("Has: M4 = %v (want true), M24 = %v (want false)", me.Has(RuleDeleteNeedsFinalizer), me.Has(RuleSchemaDescribesObject))
	}
}

func TestProblemsSortNumerically(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	for i := range 11 {
		r := reaction("dup", trigger.Resync, EmitStatus)
		if i == 0 {
			r.Name = "extra"
		}
		m.Reactions = append(m.Reactions, r)
	}
	_, err := Compile(m)
	var me *Error
	if !errors.As(err, &me) {
		t.Fatalf("Compile error = %v, want *Error", err)
	}
	var fields []string
	for _, p := range me.Problems {
		fields = append(fields, p.Field)
	}
	if !slices.IsSortedFunc(fields, compareFields) || fields[0] != "reactions[5].trigger" || fields[len(fields)-1] != "reactions[15].trigger" {
		t.Errorf("fields are not in numeric order: %v", fields)
	}
}

func TestCompileNilManifest(t *testing.T) {
	if _, err := Compile(nil); err == nil {
		t.Error("Compile(nil) = nil error")
	}
}

func TestCompileToleratesNilEntries(t *testing.T) {
	m := parseManifest(t, compositeJSON)
	m.Reactions = append(m.Reactions, nil)
	m.Operations = append(m.Operations, nil)
	if _, err := Compile(m); err == nil {
		t.Error("Compile with nil entries = nil error, want problems")
	}
}

// TestObserveOnlyKind: a kind whose resources are only ever observed
// needs an observe reaction, and then no specChange reaction.
func TestObserveOnlyKind(t *testing.T) {
	m := parseManifest(t, `{"kind": "net.vpc", "kind_version": 1,
	  "policy": {"management_policy": "observe"},
	  "reactions": [{"name": "look", "trigger": "observe", "emits": ["status", "conditions"]}]}`)
	if _, err := Compile(m); err != nil {
		t.Fatalf("an observe-only kind: %v", err)
	}
	m.Policy.ManagementPolicy = trigger.PolicyFull
	_, err := Compile(m)
	var me *Error
	if !errors.As(err, &me) || !me.Has(RuleSpecChangeRequired) {
		t.Fatalf("the same kind managed in full: %v; want M3", err)
	}
}
