package api

import (
	"context"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// Operator actions. Each is recorded as an event with the caller
// and the request's reason; the store refuses what the resource's state
// does not allow, naming the state.

// QuarantineResource freezes a resource: its queued work is dropped and no
// new work runs for it until it is unquarantined.
func (s *Service) QuarantineResource(ctx context.Context, req *convergev1.QuarantineResourceRequest) (*convergev1.QuarantineResourceResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	r, changed, err := s.store.QuarantineResource(ctx, actor(ctx), key, req.GetReason())
	if err != nil {
		return nil, storeError(err)
	}
	if changed {
		// The owner's rollup and the dependents' gates were woken.
		s.publish(ctx, notify.Tasks)
		s.publish(ctx, notify.Changes)
	}
	return &convergev1.QuarantineResourceResponse{Resource: toResource(r, s.isParked)}, nil
}

// UnquarantineResource lets a quarantined resource run again, queueing its
// reconcile if it has a generation it has not observed.
func (s *Service) UnquarantineResource(ctx context.Context, req *convergev1.UnquarantineResourceRequest) (*convergev1.UnquarantineResourceResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	r, _, err := s.store.UnquarantineResource(ctx, actor(ctx), key, req.GetReason())
	if err != nil {
		return nil, storeError(err)
	}
	s.publish(ctx, notify.Tasks)
	s.publish(ctx, notify.Changes)
	return &convergev1.UnquarantineResourceResponse{Resource: toResource(r, s.isParked)}, nil
}

// ReconcileResource runs the resource's reconcile now at its current
// generation, clearing a terminal failure.
func (s *Service) ReconcileResource(ctx context.Context, req *convergev1.ReconcileResourceRequest) (*convergev1.ReconcileResourceResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	r, err := s.store.ReconcileResource(ctx, actor(ctx), key, req.GetReason())
	if err != nil {
		return nil, storeError(err)
	}
	s.publish(ctx, notify.Tasks)
	s.publish(ctx, notify.Changes)
	return &convergev1.ReconcileResourceResponse{Resource: toResource(r, s.isParked)}, nil
}

// SetManagementPolicy moves a resource between full management and
// observation (or back to its kind's policy): one change, recorded with
// the caller, after which its reconcile runs again under the new policy.
func (s *Service) SetManagementPolicy(ctx context.Context, req *convergev1.SetManagementPolicyRequest) (*convergev1.SetManagementPolicyResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	observes := func(kind string, version int32) bool {
		e := s.kinds.Get(kind, version)
		return e != nil && e.Observes()
	}
	r, changed, err := s.store.SetManagementPolicy(ctx, actor(ctx), key, req.GetManagementPolicy(), req.GetReason(), observes)
	if err != nil {
		return nil, storeError(err)
	}
	if changed {
		s.publish(ctx, notify.Tasks)
		s.publish(ctx, notify.Changes)
	}
	return &convergev1.SetManagementPolicyResponse{Resource: toResource(r, s.isParked), Changed: changed}, nil
}
