package api

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

const (
	// explainDepth bounds how far the walk follows what a resource waits
	// on; composites nest far less deep than this.
	explainDepth = 16
	// explainFanout bounds the blockers followed from one resource.
	explainFanout = 20
)

// ExplainResource answers "why is this not Ready?": it follows what the
// resource waits on (the dependencies its gate waits for, the children
// that keep a composite from Ready, the dependents a deletion waits for)
// down to the resources blocked for a reason of their own. Each reason
// is the one the built-in conditions give, read from the scheduler's own
// decision (store.Resource.Wait), never a second guess.
func (s *Service) ExplainResource(ctx context.Context, req *convergev1.ExplainResourceRequest) (*convergev1.ExplainResourceResponse, error) {
	r, err := s.store.GetResource(ctx, namespaceOr(req.GetNamespace()), req.GetKind(), req.GetName())
	if err != nil {
		return nil, storeError(err)
	}
	max := int(req.GetMaxCauses())
	if max == 0 {
		max = 20
	}
	w := &explainWalk{s: s, max: max, seen: map[int64]bool{}, readable: s.readable(ctx)}
	if err := w.walk(ctx, r, nil, nil, 0); err != nil {
		return nil, storeError(err)
	}
	return &convergev1.ExplainResourceResponse{
		Resource: &convergev1.ResourceRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name},
		Phase:    r.Phase, Causes: w.causes, Truncated: w.truncated,
	}, nil
}

type explainWalk struct {
	s         *Service
	max       int
	seen      map[int64]bool
	causes    []*convergev1.Cause
	truncated bool
	// readable is the caller's read rule: the walk names, and does not
	// enter, resources in namespaces the caller may not read.
	readable func(ns, kind string) bool
}

// settled reports a resource that blocks nothing: Ready at its
// generation and not being deleted.
func settled(r store.Resource) bool {
	return r.Phase == "Ready" && r.SyncedGeneration >= r.Generation && r.DeletionRequestedAt == nil
}

func (w *explainWalk) walk(ctx context.Context, r store.Resource, path []*convergev1.ResourceRef, via []string, depth int) error {
	if settled(r) || w.seen[r.ID] {
		return nil
	}
	w.seen[r.ID] = true
	if len(w.causes) >= w.max || depth > explainDepth {
		w.truncated = true
		return nil
	}
	if !w.readable(r.Namespace, r.Kind) {
		w.causes = append(w.causes, &convergev1.Cause{Resource: refOf(r), Reason: ReasonNotReadable, Path: path, Via: via,
			Message: "it is in namespace " + r.Namespace + ", which the caller may not read"})
		return nil
	}
	follow, c := w.s.ownCause(r)
	if follow != "" {
		b, err := w.s.store.BlockersOf(ctx, r, explainFanout)
		if err != nil {
			return err
		}
		next := map[string][]store.Resource{"dependency": b.Dependencies, "child": b.Children, "dependent": b.Dependents}[follow]
		if len(next) > 0 {
			here := append(append([]*convergev1.ResourceRef(nil), path...), refOf(r))
			for _, n := range next {
				if err := w.walk(ctx, n, here, append(append([]string(nil), via...), follow), depth+1); err != nil {
					return err
				}
			}
			if len(next) == explainFanout {
				w.truncated = true
			}
			return nil
		}
	}
	c.Resource, c.KindVersion, c.Phase, c.Path, c.Via = refOf(r), r.KindVersion, r.Phase, path, via
	w.causes = append(w.causes, c)
	return nil
}

func refOf(r store.Resource) *convergev1.ResourceRef {
	return &convergev1.ResourceRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}

// ownCause says what r waits on: another sort of resource to follow
// ("dependency", "child" or "dependent"), and the cause to report on r
// itself when there is none of that sort (or nothing to follow).
func (s *Service) ownCause(r store.Resource) (follow string, c *convergev1.Cause) {
	ref := fmt.Sprintf("%s/%s", r.Kind, r.Name)
	cause := func(reason, msg, unblock string, until *time.Time) *convergev1.Cause {
		c := &convergev1.Cause{Reason: reason, Message: msg, Unblock: unblock}
		if until != nil {
			c.Until = timestamppb.New(*until)
		}
		return c
	}
	var notBefore *time.Time
	if r.Task != nil {
		notBefore = &r.Task.NotBefore
	}
	switch {
	case r.Quarantined:
		return "", cause(ReasonQuarantined, "it is quarantined: the scheduler runs nothing for it",
			fmt.Sprintf("conctl unquarantine %s", ref), nil)
	case r.Wait == store.HoldOrphaned:
		return "", cause(ReasonOrphaned, "its composite no longer emits it; it is deleted when the grace ends unless the composite emits it again",
			"wait, or have the composite emit it again", r.OrphanedUntil)
	case r.DeletionRequestedAt != nil:
		reason, msg := teardownWait(r)
		switch reason {
		case ReasonWaitingForDependents:
			return "dependent", cause(ReasonWaitingForDependents, msg, "it goes once they are gone", nil)
		case ReasonTeardownError:
			return "", cause(reason, msg, "fix what the teardown failure says; it retries by itself", notBefore)
		}
		return "", cause(reason, msg, workerUnblock(reason, r), nil)
	case r.SyncedGeneration < r.Generation:
		reason, msg := syncWait(r)
		if wr, wm, ok := workerAvailable(r, s.isParked); ok && (reason == ReasonPending || reason == ReasonCapReached) {
			reason, msg = wr, wm
		}
		switch reason {
		case ReasonWaiting:
			return "dependency", cause(ReasonWaiting, deref(r.Waiting), "it goes on once the value it waits for is there", nil)
		case ReasonTerminalError:
			return "", cause(reason, msg, fmt.Sprintf("fix the spec and apply it again, or conctl reconcile %s to retry it as it is", ref), nil)
		case ReasonReconcileError:
			return "", cause(reason, msg, "it retries by itself at the time given; fix what the failure says", notBefore)
		}
		return "", cause(reason, msg, workerUnblock(reason, r), nil)
	}
	// Synced, yet not Ready: a composite waits on its children; a leaf
	// reports why itself.
	msg := deref(r.FailureMessage)
	if msg == "" {
		msg = fmt.Sprintf("it is %s at generation %d", r.Phase, r.Generation)
	}
	reason := r.Phase
	if r.Phase == "Degraded" && !r.HealthOK {
		reason = ReasonUnhealthy
	}
	return "child", cause(reason, msg, "its worker reports the state; see its status and conditions", nil)
}

// workerUnblock says what unblocks work that waits on workers.
func workerUnblock(reason string, r store.Resource) string {
	switch reason {
	case ReasonNoWorker:
		return fmt.Sprintf("start a worker that serves kind %s v%d", r.Kind, r.KindVersion)
	case ReasonNotReady:
		return "make the workers ready (their readiness message says what they lack)"
	case ReasonCapReached:
		return fmt.Sprintf("wait for tasks in flight to finish, or raise the cap: conctl kind policy %s/%d --set max_inflight=N", r.Kind, r.KindVersion)
	case ReasonReconciling, ReasonTearingDown:
		return "a worker is on it; wait for its result"
	case ReasonUnqueued:
		return fmt.Sprintf("conctl reconcile %s/%s queues it", r.Kind, r.Name)
	case ReasonPending:
		return "it runs as soon as a worker that serves it has a free slot"
	}
	return ""
}
