package stdterraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/convergehq/converge/sdk-go/converge"
)

// A generated kind's resource is one Terraform resource: stdterraform
// writes its whole configuration (main.tf.json) from the kind's binding,
// the provider config and the spec, plans, says when the plan replaces the
// object, applies the plan, and reports the resource's computed attributes
// from the state.

const (
	mainFile = "main.tf.json"
	planFile = "converge.tfplan"
	lockFile = ".terraform.lock.hcl"
)

// Conditions a generated kind's resource reports.
const (
	condReplaced = "Replaced"
	condDrift    = "Drift"
)

// genMeta is the status field MetaField.
type genMeta struct {
	AppliedAt string `json:"applied_at"`
	Version   string `json:"version,omitempty"`
	State     string `json:"state"`
	Address   string `json:"address"`
	Replaced  bool   `json:"replaced"`
}

// genApply serves specChange (resync false) and resync (true).
func (h *handler) genApply(resync bool) converge.HandlerFunc {
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		s, err := parseGenSpec(t.Spec)
		if err != nil {
			return nil, converge.Terminal(err)
		}
		re, l, unlock, err := h.begin(ctx, t)
		if err != nil {
			return nil, err
		}
		defer unlock()
		r, err := h.genPrepare(ctx, re, t, l, s)
		if err != nil {
			return nil, err
		}
		if err := r.guardStateMove(ctx, h.previousState(t)); err != nil {
			return nil, err
		}
		planPath := filepath.Join(l.module(), planFile)
		changed, err := r.tf.Plan(ctx, tfexec.Out(planPath))
		if err != nil {
			return nil, h.planError(ctx, r, err)
		}
		var conds []converge.Condition
		replaced := false
		if changed {
			plan, err := r.tf.ShowPlanFile(ctx, planPath)
			if err != nil {
				return nil, tfError("terraform show (the plan)", err, nil)
			}
			var why string
			replaced, why = planReplaces(plan, h.binding.Address())
			if replaced && h.binding.Replace == ReplaceForbid {
				return nil, converge.Terminal(fmt.Errorf("replacement forbidden: the plan would destroy and re-create %s (%s), and the kind's spec_schema.%s.replace is %q; change the spec back, or delete and re-create the resource",
					h.binding.Address(), why, BindingKeyword, ReplaceForbid))
			}
			if replaced {
				h.log.Warn("the plan replaces the object; applying", "resource", t.Namespace+"/"+t.Name, "address", h.binding.Address(), "why", why)
			}
			conds = append(conds, replacedCondition(plan, h.binding.Address(), replaced, why))
			if resync {
				conds = append(conds, converge.Condition{Type: condDrift, Status: converge.ConditionTrue, Reason: "DriftCorrected",
					Message: "terraform found " + changesSummary(plan) + " on resync with the spec unchanged; applied to bring the object back to the spec"})
			}
		} else if resync {
			conds = append(conds, converge.Condition{Type: condDrift, Status: converge.ConditionFalse, Reason: "NoDrift", Message: "terraform plans no change"})
		}
		if changed {
			if err := r.tf.Apply(ctx, tfexec.DirOrPlan(planPath)); err != nil {
				return nil, tfError("terraform apply", err, nil)
			}
		}
		st, err := r.tf.Show(ctx)
		if err != nil {
			return nil, tfError("terraform show", err, nil)
		}
		status, err := h.genStatus(st, genMeta{AppliedAt: time.Now().UTC().Format(time.RFC3339), Version: h.version(ctx, r), State: r.where, Address: h.binding.Address(), Replaced: replaced})
		if err != nil {
			return nil, converge.Terminal(err)
		}
		h.log.Info("applied", "resource", t.Namespace+"/"+t.Name, "generation", t.Generation, "changed", changed, "replaced", replaced, "state", r.where)
		return &converge.Result{Status: status, Conditions: conds}, nil
	}
}

// genDestroy serves deleteRequested: terraform destroy of the one resource.
func (h *handler) genDestroy(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	previous := h.previousState(t)
	s, err := parseGenSpec(t.Spec)
	if err != nil {
		return nil, converge.Terminal(fmt.Errorf("cannot destroy: %w", err))
	}
	re, l, unlock, err := h.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if re.cfg.backendType() == backendLocal {
		empty, err := localStateEmpty(l, "default")
		if err != nil {
			return nil, err
		}
		if where := stateWhere(re.cfg, t, l, spec{}); empty && previous != "" && previous != where {
			return nil, fmt.Errorf("cannot destroy: the last apply kept the state at %s, but this run's is empty at %s (config.backend changed): change it back or move the state there, or quarantine the resource to give up on it", previous, where)
		}
		if empty {
			h.log.Info("nothing to destroy: the state is empty", "resource", t.Namespace+"/"+t.Name)
			return nil, cleanup(l)
		}
	}
	s.importID = "" // nothing is adopted on the way out
	r, err := h.genPrepare(ctx, re, t, l, s)
	if err != nil {
		return nil, fmt.Errorf("cannot destroy: %w", err)
	}
	if err := r.guardStateMove(ctx, previous); err != nil {
		return nil, fmt.Errorf("cannot destroy: %w", err)
	}
	if err := r.tf.Destroy(ctx); err != nil {
		return nil, tfError("terraform destroy", err, nil)
	}
	h.log.Info("destroyed", "resource", t.Namespace+"/"+t.Name, "state", r.where)
	return nil, cleanup(l)
}

// genPrepare writes the resource's configuration and initialises it
// against the resource's state.
func (h *handler) genPrepare(ctx context.Context, re runEnv, t *converge.Task, l layout, s genSpec) (*run, error) {
	bin, err := lookPath(re.cfg.binary())
	if err != nil {
		return nil, fmt.Errorf("config.binary: %q: %w", re.cfg.binary(), err)
	}
	if err := h.keepLock(l); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(l.module()); err != nil {
		return nil, fmt.Errorf("clearing the configuration directory: %w", err)
	}
	for _, d := range []string{l.module(), l.state()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	if err := h.restoreLock(l); err != nil {
		return nil, err
	}
	if err := h.writeMain(l, re, s, false); err != nil {
		return nil, err
	}
	tf, err := tfexec.NewTerraform(l.module(), bin)
	if err != nil {
		return nil, fmt.Errorf("config.binary: %w", err)
	}
	if err := tf.SetEnv(re.env()); err != nil {
		return nil, fmt.Errorf("config.env: %w", err)
	}
	r := &run{tf: tf, l: l}
	if err := r.genInit(ctx, re, t, h.binding); err != nil {
		return nil, err
	}
	if s.importID != "" {
		// The import block adopts the object only while the state does
		// not hold it yet; once imported, the spec's ID is history.
		st, err := tf.Show(ctx)
		if err != nil {
			return nil, tfError("terraform show", err, nil)
		}
		if _, found := stateResource(st, h.binding.Address()); !found {
			if err := h.writeMain(l, re, s, true); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// planError classifies a failed plan. terraform validate runs only now,
// sparing every successful run a process: when it finds the configuration
// invalid, the spec is at fault and the failure is terminal, with the
// provider's diagnostics and the spec field each is about; otherwise the
// plan failed for another reason (the provider's API, the state's lock)
// and is retried.
func (h *handler) planError(ctx context.Context, r *run, planErr error) error {
	if v, err := r.tf.Validate(ctx); err == nil && !v.Valid {
		return converge.Terminal(fmt.Errorf("%s refused the spec: %s", h.binding.Type, specDiagnostics(v.Diagnostics)))
	}
	return tfError("terraform plan", planErr, nil)
}

// The dependency lock file of the last run is kept beside the
// configuration, per provider version: terraform uses its plugin cache
// only for providers whose checksums the lock file records (so without it
// every init copies the provider again), and the checksums pin the
// provider the resource was first applied with.
func (h *handler) lockCopy(l layout) string {
	name := strings.NewReplacer("/", "_", ".", "_").Replace(h.binding.Source + "@" + h.binding.Version)
	return filepath.Join(l.dir, "lock-"+name+".hcl")
}

// keepLock saves the last run's lock file, if there is one.
func (h *handler) keepLock(l layout) error {
	raw, err := os.ReadFile(filepath.Join(l.module(), lockFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the lock file: %w", err)
	}
	return os.WriteFile(h.lockCopy(l), raw, 0o644)
}

// restoreLock puts the saved lock file of this provider version back.
func (h *handler) restoreLock(l layout) error {
	raw, err := os.ReadFile(h.lockCopy(l))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the saved lock file: %w", err)
	}
	return os.WriteFile(filepath.Join(l.module(), lockFile), raw, 0o644)
}

// writeMain writes main.tf.json.
func (h *handler) writeMain(l layout, re runEnv, s genSpec, withImport bool) error {
	raw, err := mainConfig(h.binding, re.cfg.Provider, s, withImport)
	if err != nil {
		return converge.Terminal(err)
	}
	if err := os.WriteFile(filepath.Join(l.module(), mainFile), raw, 0o600); err != nil {
		return fmt.Errorf("writing the configuration: %w", err)
	}
	return nil
}

// genInit initialises the configuration against the resource's backend.
func (r *run) genInit(ctx context.Context, re runEnv, t *converge.Task, b *Binding) error {
	unlock, err := re.lockInit(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	opts, err := r.backend(re, t)
	if err != nil {
		return err
	}
	if err := r.tf.Init(ctx, opts...); err != nil {
		return fmt.Errorf("%w%s", tfError(fmt.Sprintf("terraform init (provider %s %s)", b.Source, b.Version), err, nil), mirrorsSearched(re.env()["TF_CLI_CONFIG_FILE"], b))
	}
	return nil
}

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
	var parts []string
	for _, d := range diags {
		if d.Severity != tfjson.DiagnosticSeverityError {
			continue
		}
		s := d.Summary
		if field := snippetField(d); field != "" {
			s = field + ": " + s
		}
		if d.Detail != "" {
			s += ": " + strings.Join(strings.Fields(d.Detail), " ")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "terraform validate reported errors without details"
	}
	return truncate(strings.Join(parts, "; "))
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
