package conctl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// actionPoll bounds how long a wait after an action goes without reading
// the resource. A forced reconcile of a Ready resource changes no phase,
// so the Watch stream says nothing when it is done.
const actionPoll = 2 * time.Second

// outcome is where a resource stands against what an action waits for.
type outcome int

const (
	pending outcome = iota
	reached
	failed
	stuck // deleting or quarantined: the awaited work will not run
)

// actionGoal judges each read of the resource during a wait.
type actionGoal func(*convergev1.Resource) outcome

// atGeneration waits for generation gen (or a later one) to be Ready or
// Failed: the outcome of a spec change such as a rollback.
func atGeneration(gen int64) actionGoal {
	return func(r *convergev1.Resource) outcome {
		switch {
		case blockedReason(r) != "":
			return stuck
		case r.GetPhase() == client.PhaseReady && r.GetSyncedGeneration() >= gen:
			return reached
		case r.GetPhase() == client.PhaseFailed && max(r.GetFailure().GetGeneration(), r.GetGeneration()) >= gen:
			return failed
		}
		return pending
	}
}

// afterReconcile waits for the reconcile forced on before to run: a result
// applied since (its reconcile count went up) and the resource Ready, or a
// failure recorded since.
func afterReconcile(before *convergev1.Resource) actionGoal {
	return func(r *convergev1.Resource) outcome {
		switch {
		case blockedReason(r) != "":
			return stuck
		case r.GetPhase() == client.PhaseReady && r.GetReconciles() > before.GetReconciles():
			return reached
		case r.GetPhase() == client.PhaseFailed && r.GetResourceVersion() > before.GetResourceVersion():
			return failed
		}
		return pending
	}
}

// blockedReason says why no work will run for r, or "" when it may.
func blockedReason(r *convergev1.Resource) string {
	switch r.GetPhase() {
	case client.PhaseDeleting:
		return "is being deleted"
	case client.PhaseQuarantined:
		return fmt.Sprintf("is quarantined: no work runs for it until \"conctl unquarantine %s/%s\"", r.GetKind(), r.GetName())
	}
	return ""
}

// waitOutcome waits until goal judges the resource other than pending, and
// returns it with an error unless the goal was reached.
func (a *app) waitOutcome(ctx context.Context, ref resourceRef, goal actionGoal, timeout time.Duration) (*convergev1.Resource, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := a.client.WaitFor(wctx, ref.namespace, ref.kind, ref.name,
		func(r *convergev1.Resource) bool { return goal(r) != pending }, client.WithPollInterval(actionPoll))
	switch {
	case connect.CodeOf(err) == connect.CodeNotFound:
		return nil, fmt.Errorf("resource %s was deleted while waiting", ref)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		state := "not yet read"
		if r != nil {
			state = "phase " + or(r.GetPhase(), "unknown")
			if m := resourceMessage(r); m != "" {
				state += ": " + m
			}
		}
		return r, fmt.Errorf("timed out after %s waiting for resource %s (%s)", timeout, ref, state)
	case ctx.Err() != nil:
		return r, fmt.Errorf("interrupted while waiting for resource %s", ref)
	case err != nil:
		return r, wrapf(err, "wait for resource %s", ref)
	}
	switch goal(r) {
	case failed:
		return r, fmt.Errorf("resource %s failed at generation %d: %s", ref, r.GetGeneration(), or(resourceMessage(r), "no message"))
	case stuck:
		return r, fmt.Errorf("resource %s %s", ref, blockedReason(r))
	}
	return r, nil
}
