package api

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

// DryRunner returns the interceptor that serves dry_run on every write:
// the handler runs unchanged, its every statement and read inside one
// database transaction that is rolled back (store.BeginDryRun), so its
// answer — or its error — is exactly the real call's. The interceptor
// adds what the real call's answer does not say: the named resources
// before and after, and for a delete the teardown it would start. It
// wraps the authorizer, so a refused caller is refused here too and what
// the authorizer records is rolled back with the rest.
func (s *Service) DryRunner() connect.Interceptor { return dryRunner{s} }

type dryRunner struct{ svc *Service }

// dryRunField is the request's dry_run flag and the response's report,
// by one name on every write.
const dryRunField = "dry_run"

func wantsDryRun(msg any) bool {
	m, ok := msg.(proto.Message)
	if !ok {
		return false
	}
	f := m.ProtoReflect().Descriptor().Fields().ByName(dryRunField)
	return f != nil && f.Kind() == protoreflect.BoolKind && m.ProtoReflect().Get(f).Bool()
}

func (d dryRunner) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !wantsDryRun(req.Any()) {
			return next(ctx, req)
		}
		s := d.svc
		ids := namedResources(req.Any())
		dctx, end, err := s.store.BeginDryRun(ctx)
		if err != nil {
			return nil, storeError(err)
		}
		defer end()
		before, err := s.store.ResourceStates(dctx, ids)
		if err != nil {
			return nil, storeError(err)
		}
		res, err := next(dctx, req)
		if err != nil {
			return nil, err
		}
		after, err := s.store.ResourceStates(dctx, ids)
		if err != nil {
			return nil, storeError(err)
		}
		report := &convergev1.DryRunReport{}
		for _, id := range ids {
			report.Resources = append(report.Resources, plannedChange(id, before, after))
		}
		if d, ok := req.Any().(*convergev1.DeleteResourceRequest); ok && !d.GetAbandon() && len(ids) == 1 {
			if report.Teardown, err = s.plannedTeardown(dctx, ids[0], before, after); err != nil {
				return nil, storeError(err)
			}
		}
		if m, ok := res.Any().(proto.Message); ok {
			if f := m.ProtoReflect().Descriptor().Fields().ByName(dryRunField); f != nil && f.Kind() == protoreflect.MessageKind {
				m.ProtoReflect().Set(f, protoreflect.ValueOfMessage(report.ProtoReflect()))
			}
		}
		return res, nil
	}
}

func (d dryRunner) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (d dryRunner) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// namedResources lists the resources a write names, in request order.
func namedResources(msg any) []store.ResourceKey {
	one := func(ns, kind, name string) []store.ResourceKey {
		return []store.ResourceKey{{Namespace: namespaceOr(ns), Kind: kind, Name: name}}
	}
	switch m := msg.(type) {
	case *convergev1.ApplyResourceRequest:
		return one(m.GetNamespace(), m.GetKind(), m.GetName())
	case *convergev1.ApplyResourcesRequest:
		var out []store.ResourceKey
		for _, r := range m.GetResources() {
			out = append(out, one(r.GetNamespace(), r.GetKind(), r.GetName())...)
		}
		return out
	case *convergev1.DeleteResourceRequest:
		return one(m.GetNamespace(), m.GetKind(), m.GetName())
	case *convergev1.RollbackResourceRequest:
		return one(m.GetNamespace(), m.GetKind(), m.GetName())
	case *convergev1.QuarantineResourceRequest:
		return one(m.GetNamespace(), m.GetKind(), m.GetName())
	case *convergev1.UnquarantineResourceRequest:
		return one(m.GetNamespace(), m.GetKind(), m.GetName())
	case *convergev1.ReconcileResourceRequest:
		return one(m.GetNamespace(), m.GetKind(), m.GetName())
	}
	return nil
}

func plannedChange(id store.ResourceKey, before, after map[store.ResourceKey]store.ResourceState) *convergev1.PlannedResourceChange {
	out := &convergev1.PlannedResourceChange{Resource: &convergev1.ResourceRef{Namespace: id.Namespace, Kind: id.Kind, Name: id.Name}}
	b, had := before[id]
	a, has := after[id]
	if had {
		out.Before = toResourceState(b)
	}
	if has {
		out.After = toResourceState(a)
	}
	out.GenerationBumps = has && (!had || a.Generation > b.Generation)
	return out
}

func toResourceState(st store.ResourceState) *convergev1.ResourceState {
	out := &convergev1.ResourceState{
		KindVersion: st.KindVersion, Generation: st.Generation, Phase: st.Phase, Labels: st.Labels,
		Deleting: st.Deleting, Quarantined: st.Quarantined, ProviderConfig: st.ProviderConfig,
		DeletionPolicy: st.DeletionPolicy,
	}
	out.Spec = toStruct(st.Spec)
	return out
}

// plannedTeardown is the teardown a delete starts, in the order it runs.
// A resource removed at once has a teardown of one step: itself.
func (s *Service) plannedTeardown(ctx context.Context, id store.ResourceKey, before, after map[store.ResourceKey]store.ResourceState) ([]*convergev1.PlannedTeardownStep, error) {
	steps, err := s.store.TeardownOrder(ctx, id)
	if err != nil {
		return nil, err
	}
	if _, remains := after[id]; len(steps) == 0 && !remains {
		if b, had := before[id]; had {
			steps = []store.TeardownStep{{ResourceState: b, Wave: 1}}
		}
	}
	out := make([]*convergev1.PlannedTeardownStep, len(steps))
	for i, st := range steps {
		action := "frozen"
		if !st.Quarantined {
			var policy store.TeardownPolicy
			if e := s.kinds.Get(st.Kind, st.KindVersion); e != nil {
				policy = e.Teardown()
			}
			action = policy.Action(st.DeletionPolicy, st.Observed)
		}
		out[i] = &convergev1.PlannedTeardownStep{
			Resource: &convergev1.ResourceRef{Namespace: st.Namespace, Kind: st.Kind, Name: st.Name},
			Wave:     int32(st.Wave), Action: action,
		}
	}
	return out, nil
}

// publish tells this replica's loops that the database has new work;
// a dry run's writes are rolled back, so it tells nobody, and writes not
// committed yet are told of by whoever commits them.
func (s *Service) publish(ctx context.Context, channel string) {
	if store.Uncommitted(ctx) {
		return
	}
	s.bus.Publish(channel)
}
