package converge

import convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"

// Rollup summarises a composite's children for a childrenSettled reaction:
// how many are in each phase, and the deepest descendants that keep the
// composite from being Ready. It is bounded, not the whole subtree.
type Rollup struct {
	// Total counts the live children; Orphaned and Quarantined ones are
	// excluded from the rollup and counted in Excluded instead.
	Total       int
	Ready       int
	Reconciling int
	Degraded    int
	Failed      int
	Deleting    int
	Excluded    int
	// Culprits are the deepest descendants that keep the composite from
	// being Ready: at most ten, failed ones first.
	Culprits []Culprit
}

// Culprit is a descendant that keeps a composite from being Ready.
type Culprit struct {
	// Resource names the descendant.
	Resource Ref
	// Phase is the descendant's phase, e.g. "Failed" or "Degraded".
	Phase string
	// Message says why, e.g. the descendant's failure message.
	Message string
	// Path lists the composites between the one the rollup is for and the
	// culprit, top down; empty for a direct child.
	Path []Ref
}

// newRollup converts the wire rollup; nil when the task carries none.
func newRollup(m *convergev1.Rollup) *Rollup {
	if m == nil {
		return nil
	}
	r := &Rollup{
		Total:       int(m.GetTotal()),
		Ready:       int(m.GetReady()),
		Reconciling: int(m.GetReconciling()),
		Degraded:    int(m.GetDegraded()),
		Failed:      int(m.GetFailed()),
		Deleting:    int(m.GetDeleting()),
		Excluded:    int(m.GetExcluded()),
	}
	for _, c := range m.GetCulprits() {
		culprit := Culprit{Resource: refOf(c.GetResource()), Phase: c.GetPhase(), Message: c.GetMessage()}
		for _, p := range c.GetPath() {
			culprit.Path = append(culprit.Path, refOf(p))
		}
		r.Culprits = append(r.Culprits, culprit)
	}
	return r
}

func refOf(m *convergev1.ResourceRef) Ref {
	return Ref{Namespace: m.GetNamespace(), Kind: m.GetKind(), Name: m.GetName()}
}
