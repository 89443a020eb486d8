package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/convergehq/converge/server/internal/store"
)

// recomposeWave forces the reconcile of the wave's members through the
// path ReconcileResource takes (for a composite, its composer runs again
// with the composer or graph it has now); a member is done once it is
// Ready after a reconcile that came later.
func (d *Driver) recomposeWave(ctx context.Context, st store.RolloutStep, actor string) error {
	members, err := d.store.LockWaveMembers(ctx, st.ID, st.Wave)
	if err != nil {
		return err
	}
	outcomes := make([]store.MemberOutcome, len(members))
	reason := fmt.Sprintf("rollout %d, wave %d of %d", st.ID, st.Wave, st.Waves)
	for i, m := range members {
		o := &outcomes[i]
		o.ResourceID, o.State = m.ResourceID, "skipped"
		id := fmt.Sprintf("%s/%s/%s", m.Namespace, st.Kind, m.Name)
		if o.Reason = skipReason(m, id, st.To); o.Reason != "" {
			continue
		}
		_, err := d.store.ReconcileResource(ctx, actor, store.ResourceKey{Namespace: m.Namespace, Kind: st.Kind, Name: m.Name}, reason)
		switch {
		case errors.Is(err, store.ErrConflict):
			o.State, o.Reason = "failed", fmt.Sprintf("%s: %s", id, strings.TrimPrefix(err.Error(), store.ErrConflict.Error()+": "))
		case err != nil:
			return err
		default:
			o.State, o.MovedGeneration, o.MovedReconciles = "moving", m.Generation, m.Reconciles
		}
	}
	return d.store.StartWave(ctx, st, outcomes, actor)
}
