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

// eventReplacing is the reason of the event that announces a replacement.
const (
	eventReplacing        = "Replacing"
	eventReplaceForbidden = "ReplacementForbidden"
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
		s.importID = importID(t, s)
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
		if err != nil && s.importID != "" && strings.Contains(err.Error(), nonExistentImport) {
			return nil, importError(s.importID, err)
		}
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
			if replaced {
				if err := h.announceReplacement(ctx, t, why); err != nil {
					return nil, err
				}
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
		meta := genMeta{AppliedAt: time.Now().UTC().Format(time.RFC3339), Version: h.version(ctx, r), State: r.where, Address: h.binding.Address(), Replaced: replaced}
		if prev := previousMeta(t); !changed && prev.AppliedAt != "" {
			// Nothing was applied: the report of the last apply stands.
			meta.AppliedAt, meta.Replaced = prev.AppliedAt, prev.Replaced
		}
		status, err := h.genStatus(st, meta)
		if err != nil {
			return nil, converge.Terminal(err)
		}
		h.log.Info("applied", "resource", t.Namespace+"/"+t.Name, "generation", t.Generation, "changed", changed, "replaced", replaced, "state", r.where)
		return &converge.Result{Status: status, Conditions: conds}, nil
	}
}

// announceReplacement says, in a Warning event recorded before anything is
// applied, that the plan destroys and re-creates the object and why: the
// Replaced condition only arrives with the result, after the apply. With
// replace: forbid it then refuses the plan, terminally.
func (h *handler) announceReplacement(ctx context.Context, t *converge.Task, why string) error {
	addr, forbid := h.binding.Address(), h.binding.Replace == ReplaceForbid
	reason, msg := eventReplacing, fmt.Sprintf("the plan destroys and re-creates %s: %s; applying", addr, why)
	if forbid {
		reason, msg = eventReplaceForbidden, fmt.Sprintf("the plan would destroy and re-create %s: %s; not applied, the kind forbids replacement", addr, why)
	}
	if err := t.Event(ctx, converge.EventWarning, reason, msg); err != nil {
		// The event is a courtesy: the condition and the log still say it.
		h.log.Warn("could not record the "+reason+" event", "resource", t.Namespace+"/"+t.Name, "err", err)
	}
	if forbid {
		return converge.Terminal(fmt.Errorf("replacement forbidden: the plan would destroy and re-create %s (%s), and the kind's spec_schema.%s.replace is %q; change the spec back, or delete and re-create the resource",
			addr, why, BindingKeyword, ReplaceForbid))
	}
	h.log.Warn("the plan replaces the object; applying", "resource", t.Namespace+"/"+t.Name, "address", addr, "why", why)
	return nil
}

// previousMeta is the run's report in the resource's status, zero before
// the first apply.
func previousMeta(t *converge.Task) genMeta {
	var st struct {
		Meta genMeta `json:"terraform"`
	}
	_ = json.Unmarshal(t.Status, &st) // no status yet, or another shape: zero
	return st.Meta
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
// configuration, per provider version, since each run starts from a fresh
// directory: its checksums pin the provider the resource was first applied
// with, and terraform links a provider from its plugin cache only when
// the lock file vouches for it.
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
