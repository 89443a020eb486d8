package api

import (
	"context"
	"errors"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/reactor"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// ApplyReactorBinding creates or updates a reactor binding. The emitter
// reads bindings afresh for every batch, so an edit applies within about
// a second, with no restart.
func (s *Service) ApplyReactorBinding(ctx context.Context, req *convergev1.ApplyReactorBindingRequest) (*convergev1.ApplyReactorBindingResponse, error) {
	in, err := s.checkBinding(ctx, req.GetBinding())
	if err != nil {
		return nil, err
	}
	row, result, err := s.store.ApplyReactorBinding(ctx, in)
	if err != nil {
		return nil, bindingStoreError(err)
	}
	if result != "unchanged" {
		// Emitters keep a cached count of bindings; this refreshes it.
		s.publish(ctx, notify.Kinds)
	}
	return &convergev1.ApplyReactorBindingResponse{Binding: toBinding(row), Result: result}, nil
}

// GetReactorBinding returns one binding.
func (s *Service) GetReactorBinding(ctx context.Context, req *convergev1.GetReactorBindingRequest) (*convergev1.GetReactorBindingResponse, error) {
	row, err := s.store.GetReactorBinding(ctx, req.GetName())
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.GetReactorBindingResponse{Binding: toBinding(row)}, nil
}

// ListReactorBindings returns every binding, or those watching one kind.
func (s *Service) ListReactorBindings(ctx context.Context, req *convergev1.ListReactorBindingsRequest) (*convergev1.ListReactorBindingsResponse, error) {
	rows, err := s.store.ListReactorBindings(ctx, req.GetWatchKind())
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListReactorBindingsResponse{Bindings: make([]*convergev1.ReactorBinding, len(rows))}
	for i, row := range rows {
		out.Bindings[i] = toBinding(row)
	}
	return out, nil
}

// DeleteReactorBinding removes a binding; deliveries already queued still
// run.
func (s *Service) DeleteReactorBinding(ctx context.Context, req *convergev1.DeleteReactorBindingRequest) (*convergev1.DeleteReactorBindingResponse, error) {
	if err := s.store.DeleteReactorBinding(ctx, req.GetName()); err != nil {
		return nil, storeError(err)
	}
	s.publish(ctx, notify.Kinds)
	return &convergev1.DeleteReactorBindingResponse{}, nil
}

// checkBinding validates a binding beyond its field rules: a selector that
// parses, the reactor kind registered with a reactor reaction. Whether the
// watched kind exists is checked in the store's transaction.
func (s *Service) checkBinding(ctx context.Context, b *convergev1.ReactorBinding) (store.ReactorBinding, error) {
	transitions, err := canonicalTransitions(b.GetTransitions())
	if err != nil {
		return store.ReactorBinding{}, err
	}
	if _, err := labels.Parse(b.GetLabelSelector()); err != nil {
		return store.ReactorBinding{}, invalid("binding.label_selector: %v", err)
	}
	if b.GetLabelSelector() != "" && slices.Contains(transitions, reactor.Deleted) {
		return store.ReactorBinding{}, invalid("binding.transitions: %q cannot be combined with a label_selector: "+
			"a deleted resource's labels are gone, so the selector could never match it; "+
			"watch deleted with a second binding that has no selector", reactor.Deleted)
	}
	kind, version := b.GetReactorKind(), b.GetReactorKindVersion()
	e := s.kinds.Get(kind, version)
	if e == nil {
		// Applied a moment ago on another replica, perhaps.
		if err := s.kinds.Refresh(ctx); err != nil {
			return store.ReactorBinding{}, storeError(err)
		}
		e = s.kinds.Get(kind, version)
	}
	if e == nil {
		return store.ReactorBinding{}, invalid("binding.reactor_kind: kind %s v%d is not registered; apply the reactor kind first", kind, version)
	}
	if _, ok := e.Reaction(trigger.Reactor); !ok {
		return store.ReactorBinding{}, invalid("binding.reactor_kind: kind %s v%d has no reaction with trigger %q; a binding's reactor kind must declare one",
			kind, version, trigger.Reactor)
	}
	return store.ReactorBinding{
		Name: b.GetName(), WatchKind: b.GetWatchKind(), WatchKindVersion: b.GetWatchKindVersion(),
		Transitions: transitions, LabelSelector: b.GetLabelSelector(),
		ReactorKind: kind, ReactorKindVersion: version, Disabled: b.GetDisabled(),
	}, nil
}

// canonicalTransitions checks the transitions and puts them in the
// canonical order, so re-applying them in another order is unchanged.
func canonicalTransitions(ts []string) ([]string, error) {
	if len(ts) == 0 {
		return nil, invalid("binding.transitions: at least one of %v is required", reactor.Transitions)
	}
	for i, t := range ts {
		if !slices.Contains(reactor.Transitions, t) {
			return nil, invalid("binding.transitions[%d]: %q is not one of %v", i, t, reactor.Transitions)
		}
	}
	var out []string
	for _, t := range reactor.Transitions {
		if slices.Contains(ts, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// bindingStoreError maps a binding naming an unregistered kind to
// InvalidArgument; the message names the field.
func bindingStoreError(err error) error {
	if errors.Is(err, store.ErrInvalidBinding) {
		return connect.NewError(connect.CodeInvalidArgument, errors.New(trimSentinel(err, store.ErrInvalidBinding)))
	}
	return storeError(err)
}

func toBinding(b store.ReactorBinding) *convergev1.ReactorBinding {
	return &convergev1.ReactorBinding{
		Name: b.Name, WatchKind: b.WatchKind, WatchKindVersion: b.WatchKindVersion,
		Transitions: b.Transitions, LabelSelector: b.LabelSelector,
		ReactorKind: b.ReactorKind, ReactorKindVersion: b.ReactorKindVersion, Disabled: b.Disabled,
		Revision:  b.Revision,
		CreatedAt: timestamppb.New(b.CreatedAt), UpdatedAt: timestamppb.New(b.UpdatedAt),
	}
}
