package stdterraform

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/convergehq/converge/sdk-go/converge"
)

// A generated kind's observe reaction runs for a resource whose
// management policy is observe: it brings the object into the resource's
// state with terraform import (while the state does not hold it yet), then
// runs a refresh-only plan, which reads the real object and can change
// nothing but the state, and reports the object's attributes from the
// state. It never plans against the spec, so nothing is created, changed
// or destroyed.

// condObserved is the condition an observe reports.
const condObserved = "ChangedOutside"

// importID is what a generated kind's resource adopts: the resource's own
// import id (import.id, in the task) wins over the older spec.import_id.
func importID(t *converge.Task, s genSpec) string {
	if t.ImportID != "" {
		return t.ImportID
	}
	return s.importID
}

// genObserve serves observe.
func (h *handler) genObserve(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	s, err := parseGenSpec(t.Spec)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	id := importID(t, s)
	s.importID = "" // imported with terraform import below, never planned
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
	st, err := r.tf.Show(ctx)
	if err != nil {
		return nil, tfError("terraform show", err, nil)
	}
	addr := h.binding.Address()
	if _, found := stateResource(st, addr); !found {
		if id == "" {
			return nil, converge.Terminal(fmt.Errorf("nothing to observe: the state holds no %s, and the resource names no object to import (import.id)", addr))
		}
		if err := r.tf.Import(ctx, addr, id); err != nil {
			return nil, importError(id, err)
		}
		h.log.Info("imported", "resource", t.Namespace+"/"+t.Name, "address", addr, "id", id)
	}
	planPath := filepath.Join(l.module(), planFile)
	changed, err := r.tf.Plan(ctx, tfexec.RefreshOnly(true), tfexec.Out(planPath))
	if err != nil {
		return nil, tfError("terraform plan -refresh-only", err, nil)
	}
	cond := converge.Condition{Type: condObserved, Status: converge.ConditionFalse, Reason: "NoChange",
		Message: "the object is as the state last recorded it"}
	if changed {
		plan, err := r.tf.ShowPlanFile(ctx, planPath)
		if err != nil {
			return nil, tfError("terraform show (the plan)", err, nil)
		}
		// Applying a refresh-only plan writes the state and nothing else.
		if err := r.tf.Apply(ctx, tfexec.DirOrPlan(planPath)); err != nil {
			return nil, tfError("terraform apply -refresh-only", err, nil)
		}
		if drift := driftSummary(plan); drift != "" {
			cond = converge.Condition{Type: condObserved, Status: converge.ConditionTrue, Reason: "Refreshed",
				Message: "terraform found " + drift + "; recorded in the state, nothing changed (management policy observe)"}
		}
	}
	if st, err = r.tf.Show(ctx); err != nil {
		return nil, tfError("terraform show", err, nil)
	}
	meta := genMeta{AppliedAt: time.Now().UTC().Format(time.RFC3339), Version: h.version(ctx, r), State: r.where, Address: addr}
	if prev := previousMeta(t); prev.AppliedAt != "" {
		meta.AppliedAt, meta.Replaced = prev.AppliedAt, prev.Replaced // nothing was applied
	}
	status, err := h.genStatus(st, meta)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	h.log.Info("observed", "resource", t.Namespace+"/"+t.Name, "changed outside", changed, "state", r.where)
	return &converge.Result{Status: status, Conditions: []converge.Condition{cond}}, nil
}

// nonExistentImport is how terraform says an import id names no object.
const nonExistentImport = "Cannot import non-existent remote object"

// importError classifies a failed terraform import: an object the
// provider says does not exist (or an id it cannot read as one) is a
// terminal ImportNotFound naming the id; anything else is retried.
func importError(id string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("terraform import: %w", err)
	}
	out := err.Error()
	if strings.Contains(out, nonExistentImport) {
		return converge.ImportNotFound(id, errors.New("terraform import: "+message(out)))
	}
	return tfError("terraform import", err, nil)
}

// driftSummary names what a refresh-only plan found changed outside
// terraform, "" when nothing was (a refresh-only plan may still rewrite
// the state, e.g. in a newer format).
func driftSummary(p *tfjson.Plan) string {
	var parts []string
	for _, rc := range p.ResourceDrift {
		if rc.Change == nil || rc.Change.Actions.NoOp() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %v", rc.Address, rc.Change.Actions))
	}
	if len(parts) == 0 {
		return ""
	}
	return "changes made outside it (" + strings.Join(parts, "; ") + ")"
}
