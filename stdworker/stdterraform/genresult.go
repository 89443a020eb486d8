package stdterraform

import (
	"encoding/json"
	"fmt"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/convergehq/converge/sdk-go/converge"
)

// What a generated kind's run reads from terraform's plan and state: the
// replacement, the drift, the status and the spec fields diagnostics are
// about.

// planReplaces reports whether the plan replaces the resource at address,
// and which attributes force it.
func planReplaces(p *tfjson.Plan, address string) (bool, string) {
	for _, rc := range p.ResourceChanges {
		if rc.Address != address || rc.Change == nil || !rc.Change.Actions.Replace() {
			continue
		}
		var paths []string
		for _, rp := range rc.Change.ReplacePaths {
			paths = append(paths, attributePath(rp))
		}
		if len(paths) == 0 {
			return true, "the provider asks for it"
		}
		return true, "changing " + strings.Join(paths, ", ") + " forces replacement"
	}
	return false, ""
}

// attributePath renders one of a plan's replace paths ([]any of names and
// indexes) as spec.a.b[0].
func attributePath(p any) string {
	steps, ok := p.([]any)
	if !ok {
		return fmt.Sprint(p)
	}
	s := "spec"
	for _, st := range steps {
		switch v := st.(type) {
		case string:
			s += "." + v
		default:
			s += fmt.Sprintf("[%v]", v)
		}
	}
	return s
}

// changesSummary names what a plan changes, for the drift condition.
func changesSummary(p *tfjson.Plan) string {
	var parts []string
	for _, rc := range p.ResourceChanges {
		if rc.Change == nil || rc.Change.Actions.NoOp() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %v", rc.Address, rc.Change.Actions))
	}
	if len(parts) == 0 {
		return "changes"
	}
	return "changes (" + strings.Join(parts, "; ") + ")"
}

// replacedCondition says whether the applied plan replaced the object,
// or created or changed it.
func replacedCondition(p *tfjson.Plan, address string, replaced bool, why string) converge.Condition {
	if replaced {
		return converge.Condition{Type: condReplaced, Status: converge.ConditionTrue, Reason: "Replaced", Message: "the plan destroyed and re-created " + address + ": " + why}
	}
	for _, rc := range p.ResourceChanges {
		if rc.Address == address && rc.Change != nil && rc.Change.Actions.Create() {
			return converge.Condition{Type: condReplaced, Status: converge.ConditionFalse, Reason: "Created", Message: address + " was created"}
		}
	}
	return converge.Condition{Type: condReplaced, Status: converge.ConditionFalse, Reason: "InPlace", Message: address + " was changed in place"}
}

// stateResource finds the resource at address in a state.
func stateResource(st *tfjson.State, address string) (*tfjson.StateResource, bool) {
	if st == nil || st.Values == nil || st.Values.RootModule == nil {
		return nil, false
	}
	for _, r := range st.Values.RootModule.Resources {
		if r.Address == address {
			return r, true
		}
	}
	return nil, false
}

// genStatus is the status of an applied resource: the status_schema's
// attributes found in the state (nulls and sensitive values left out),
// and the run's report.
func (h *handler) genStatus(st *tfjson.State, meta genMeta) (map[string]any, error) {
	r, ok := stateResource(st, h.binding.Address())
	if !ok {
		return nil, fmt.Errorf("%s is not in the state after the apply", h.binding.Address())
	}
	var sensitive map[string]any
	_ = json.Unmarshal(r.SensitiveValues, &sensitive) // absent or not an object: nothing is sensitive
	out := map[string]any{MetaField: meta}
	for name := range h.statusFields {
		v, ok := r.AttributeValues[name]
		if !ok || v == nil || sensitive[name] != nil {
			continue
		}
		if v = dropNulls(v); v != nil {
			out[name] = v
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if len(raw) > maxOutputs {
		return nil, fmt.Errorf("status: the attributes take %d bytes, more than the %d a status may hold", len(raw), maxOutputs)
	}
	return out, nil
}

// dropNulls removes null members from objects, so that an unset optional
// attribute is absent from the status rather than a null its schema does
// not allow.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e = dropNulls(e); e != nil {
				out[k] = e
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e = dropNulls(e); e != nil {
				out = append(out, e)
			}
		}
		return out
	}
	return v
}

// specDiagnostics renders terraform validate's errors with the spec field
// each one points at, when its source line names one.
func specDiagnostics(diags []tfjson.Diagnostic) string {
	return diagnostics(diags, func(d tfjson.Diagnostic, s string) string {
		if field := snippetField(d); field != "" {
			s = field + ": " + s
		}
		return s
	})
}

// snippetField reads the argument a diagnostic's source line sets: main.tf.json
// is written one argument a line, `"name": value`.
func snippetField(d tfjson.Diagnostic) string {
	if d.Snippet == nil {
		return ""
	}
	code := strings.TrimSpace(d.Snippet.Code)
	name, _, ok := strings.Cut(strings.TrimPrefix(code, `"`), `":`)
	if !ok || !strings.HasPrefix(code, `"`) || name == "" || strings.ContainsAny(name, `" `) {
		return ""
	}
	return "spec." + name
}
