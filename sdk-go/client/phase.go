package client

import convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"

// The phases a resource can be in, in the server's precedence order.
const (
	PhaseDeleting    = "Deleting"
	PhaseQuarantined = "Quarantined"
	PhaseFailed      = "Failed"
	PhaseOrphaned    = "Orphaned"
	PhaseDegraded    = "Degraded"
	PhaseReady       = "Ready"
	PhaseReconciling = "Reconciling"
)

// Phases lists every phase in precedence order.
func Phases() []string {
	return []string{PhaseDeleting, PhaseQuarantined, PhaseFailed, PhaseOrphaned, PhaseDegraded, PhaseReady, PhaseReconciling}
}

// IsReady reports whether r is Ready. A nil resource is not.
func IsReady(r *convergev1.Resource) bool {
	return r.GetPhase() == PhaseReady
}

// Settled reports whether r has come to rest: Ready, or Failed. Use it as the
// done function of WaitFor to wait out a reconcile whatever its outcome.
func Settled(r *convergev1.Resource) bool {
	p := r.GetPhase()
	return p == PhaseReady || p == PhaseFailed
}
