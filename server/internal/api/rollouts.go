package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/rollout"
	"github.com/convergehq/converge/server/internal/store"
)

// StartRollout checks a rollout against the kinds as registered now and
// records it; the rollout driver of some replica then takes its steps.
func (s *Service) StartRollout(ctx context.Context, req *convergev1.StartRolloutRequest) (*convergev1.StartRolloutResponse, error) {
	in := store.RolloutInput{
		Kind: req.GetKind(), From: req.GetFromVersion(), To: req.GetToVersion(), Namespace: req.GetNamespace(),
		WaveCount: req.GetWaveCount(), SoakSeconds: req.GetSoakSeconds(), MaxFailures: req.GetMaxFailures(),
		MaxFailurePercent: req.GetMaxFailurePercent(), ReadyTimeoutSeconds: req.GetReadyTimeoutSeconds(), Reason: req.GetReason(),
	}
	if in.ReadyTimeoutSeconds == 0 {
		in.ReadyTimeoutSeconds = int32(rollout.DefaultReadyTimeout.Seconds())
	}
	if len(req.GetWaves()) > 0 && in.WaveCount > 0 {
		return nil, invalid("waves and wave_count: give one of them, not both")
	}
	if len(req.GetWaves()) == 0 && in.WaveCount == 0 {
		in.WaveCount = 1
	}
	for i, w := range req.GetWaves() {
		wi := store.RolloutWaveInput{Count: w.GetCount(), Percent: w.GetPercent(), SelectorText: w.GetLabelSelector()}
		if w.GetLabelSelector() != "" {
			sel, err := labels.Parse(w.GetLabelSelector())
			if err != nil {
				return nil, invalid("waves[%d].label_selector: %v", i, err)
			}
			wi.Selector = sel
		}
		in.Waves = append(in.Waves, wi)
	}
	target := s.kinds.Get(in.Kind, in.To)
	if target == nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("to_version: kind %s v%d is not registered", in.Kind, in.To))
	}
	if req.GetRecompose() {
		if in.From != 0 && in.From != in.To {
			return nil, invalid("from_version: a recompose rollout stays at to_version v%d; leave from_version 0", in.To)
		}
		in.From, in.Mode = in.To, store.RolloutRecompose
		return s.createRollout(ctx, in)
	}
	if in.From == 0 {
		in.From = in.To - 1
		if c := target.Compiled.Manifest.GetConversion(); c != nil {
			in.From = c.GetFromVersion()
			if in.From == 0 {
				in.From = in.To - 1
			}
		}
	}
	if in.From >= in.To {
		return nil, invalid("from_version: a rollout moves to a newer version; v%d is not older than to_version v%d", in.From, in.To)
	}
	if target.Compiled.Policy.Retired {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("to_version: kind %s v%d is retired", in.Kind, in.To))
	}
	if _, err := rollout.Converter(s.kinds, in.Kind, in.From, in.To); err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("to_version: %v", err))
	}
	return s.createRollout(ctx, in)
}

func (s *Service) createRollout(ctx context.Context, in store.RolloutInput) (*convergev1.StartRolloutResponse, error) {
	id, err := s.store.CreateRollout(ctx, in, actor(ctx))
	if err != nil {
		return nil, storeError(err)
	}
	r, err := s.store.GetRollout(ctx, id, true)
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.StartRolloutResponse{Rollout: toRollout(r)}, nil
}

// GetRollout reads one rollout.
func (s *Service) GetRollout(ctx context.Context, req *convergev1.GetRolloutRequest) (*convergev1.GetRolloutResponse, error) {
	r, err := s.store.GetRollout(ctx, req.GetRolloutId(), true)
	if err != nil {
		return nil, storeError(err)
	}
	// A rollout is the kind's, readable by every reader; its failures
	// name resources, shown only where the caller may read them.
	readable, kept := s.readable(ctx), r.Failures[:0]
	for _, f := range r.Failures {
		if readable(f.Namespace, r.Kind) {
			kept = append(kept, f)
		}
	}
	r.Failures = kept
	return &convergev1.GetRolloutResponse{Rollout: toRollout(r)}, nil
}

// ListRollouts lists rollouts newest first.
func (s *Service) ListRollouts(ctx context.Context, req *convergev1.ListRolloutsRequest) (*convergev1.ListRolloutsResponse, error) {
	rs, err := s.store.ListRollouts(ctx, req.GetKind(), int(req.GetPageSize()))
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListRolloutsResponse{}
	for _, r := range rs {
		out.Rollouts = append(out.Rollouts, toRollout(r))
	}
	return out, nil
}

// PauseRollout holds a running rollout before its next step.
func (s *Service) PauseRollout(ctx context.Context, req *convergev1.PauseRolloutRequest) (*convergev1.PauseRolloutResponse, error) {
	r, err := s.transition(ctx, req.GetRolloutId(), store.PauseRollout, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &convergev1.PauseRolloutResponse{Rollout: r}, nil
}

// ResumeRollout lets a paused or stopped rollout go on.
func (s *Service) ResumeRollout(ctx context.Context, req *convergev1.ResumeRolloutRequest) (*convergev1.ResumeRolloutResponse, error) {
	r, err := s.transition(ctx, req.GetRolloutId(), store.ResumeRollout, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &convergev1.ResumeRolloutResponse{Rollout: r}, nil
}

// AbortRollout ends a rollout, leaving moved resources where they are.
func (s *Service) AbortRollout(ctx context.Context, req *convergev1.AbortRolloutRequest) (*convergev1.AbortRolloutResponse, error) {
	r, err := s.transition(ctx, req.GetRolloutId(), store.AbortRollout, req.GetReason())
	if err != nil {
		return nil, err
	}
	return &convergev1.AbortRolloutResponse{Rollout: r}, nil
}

func (s *Service) transition(ctx context.Context, id int64, t store.RolloutTransition, reason string) (*convergev1.Rollout, error) {
	if err := s.store.TransitionRollout(ctx, id, t, reason, actor(ctx)); err != nil {
		return nil, storeError(err)
	}
	r, err := s.store.GetRollout(ctx, id, true)
	if err != nil {
		return nil, storeError(err)
	}
	return toRollout(r), nil
}

// RollbackRollout moves every resource the rollout moved, and that is
// still at the new version, back to the old version with the spec it had
// before, in one transaction, and ends the rollout.
func (s *Service) RollbackRollout(ctx context.Context, req *convergev1.RollbackRolloutRequest) (*convergev1.RollbackRolloutResponse, error) {
	id, who := req.GetRolloutId(), actor(ctx)
	err := s.store.Atomic(ctx, func(ctx context.Context) error {
		r, members, err := s.store.LockRollbackMembers(ctx, id)
		if err != nil {
			return err
		}
		moves := make([]rollout.Move, len(members))
		for i, m := range members {
			moves[i] = rollout.Move{Namespace: m.Namespace, Kind: m.Kind, Name: m.Name, ToVersion: r.From, Spec: m.OldSpec,
				Labels: m.Labels, ProviderConfig: m.ProviderConfig, DeletionPolicy: m.DeletionPolicy}
		}
		res, err := s.MoveResources(ctx, store.SourceRollout, fmt.Sprintf("%s (rollback of rollout %d)", who, id), moves)
		if err != nil {
			return err
		}
		var back []int64
		refused := map[int64]string{}
		for i, m := range res {
			if m.Err != nil {
				refused[members[i].ResourceID] = m.Err.Error()
				continue
			}
			back = append(back, members[i].ResourceID)
		}
		return s.store.FinishRollback(ctx, r, back, refused, req.GetReason(), who)
	})
	if err != nil {
		return nil, storeError(err)
	}
	s.publish(ctx, notify.Tasks)
	s.publish(ctx, notify.Changes)
	r, err := s.store.GetRollout(ctx, id, true)
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.RollbackRolloutResponse{Rollout: toRollout(r)}, nil
}

// MoveResources implements rollout.Mover: each move is validated as an
// ApplyResource of it would be, and the valid ones are applied together
// (each on its own if the batch is refused, so a refusal names its
// resource). It runs in ctx's transaction and wakes nobody: the caller
// publishes once its transaction commits.
func (s *Service) MoveResources(ctx context.Context, source, who string, moves []rollout.Move) ([]rollout.Moved, error) {
	out := make([]rollout.Moved, len(moves))
	var all []store.ApplyInput
	var index []int
	for i, m := range moves {
		req, err := s.moveRequest(ctx, m)
		var in []store.ApplyInput
		if err == nil {
			in, err = s.validate([]*convergev1.ApplyResourceRequest{req}, false)
		}
		if err != nil {
			out[i].Err = errors.New(errorMessage(err))
			continue
		}
		all, index = append(all, in[0]), append(index, i)
	}
	if len(all) == 0 {
		return out, nil
	}
	results, _, err := s.store.ApplyResourcesFrom(ctx, source, who, all)
	if err == nil {
		for j, r := range results {
			out[index[j]].Generation = r.Generation
		}
		return out, nil
	}
	if !refusal(err) {
		return nil, s.staleKinds(ctx, err)
	}
	for j, in := range all {
		rs, _, err := s.store.ApplyResourcesFrom(ctx, source, who, []store.ApplyInput{in})
		switch {
		case err == nil:
			out[index[j]].Generation = rs[0].Generation
		case refusal(err):
			out[index[j]].Err = errors.New(errorMessage(storeError(err)))
		default:
			return nil, s.staleKinds(ctx, err)
		}
	}
	return out, nil
}

// refusal reports whether an apply was refused for what it asked (a
// resource being deleted, a retired version), not for a fault.
func refusal(err error) bool {
	return errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound)
}

// staleKinds refreshes the kinds when a kind changed under a move, so the
// move's caller, retrying later, validates against the kind as it is now.
func (s *Service) staleKinds(ctx context.Context, err error) error {
	if errors.Is(err, store.ErrStaleKind) {
		if rerr := s.kinds.Refresh(ctx); rerr != nil {
			s.log.Warn("refreshing kinds after a stale move failed", "err", rerr)
		}
	}
	return err
}

// moveRequest is the apply a move makes. The stored spec's sealed values
// are opened for it (never output): the apply validates the spec in the
// clear at the new version and seals it at that version's secret paths.
func (s *Service) moveRequest(ctx context.Context, m rollout.Move) (*convergev1.ApplyResourceRequest, error) {
	spec, err := s.kinds.Secrets().OpenJSON(ctx, m.Spec)
	if err != nil {
		return nil, fmt.Errorf("spec: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, fmt.Errorf("spec: %v", err)
	}
	st, err := structpb.NewStruct(doc)
	if err != nil {
		return nil, fmt.Errorf("spec: %v", err)
	}
	req := &convergev1.ApplyResourceRequest{Namespace: m.Namespace, Kind: m.Kind, KindVersion: m.ToVersion, Name: m.Name,
		Spec: st, DeletionPolicy: m.DeletionPolicy, ProviderConfig: m.ProviderConfig}
	if len(m.Labels) > 0 {
		if err := json.Unmarshal(m.Labels, &req.Labels); err != nil {
			return nil, fmt.Errorf("labels: %v", err)
		}
	}
	return req, nil
}

// errorMessage is an error's message without the connect code prefix.
func errorMessage(err error) string {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce.Message()
	}
	return err.Error()
}

func toRollout(r store.Rollout) *convergev1.Rollout {
	out := &convergev1.Rollout{
		Id: r.ID, Kind: r.Kind, FromVersion: r.From, ToVersion: r.To, Namespace: r.Namespace, State: r.State,
		Reason: r.Reason, SoakSeconds: r.SoakSeconds, MaxFailures: r.MaxFailures, MaxFailurePercent: r.MaxFailurePercent,
		ReadyTimeoutSeconds: r.ReadyTimeoutSeconds, Actor: r.Actor, CurrentWave: r.CurrentWave(), Mode: r.Mode,
		Counts: toRolloutCounts(r.Counts), CreatedAt: timestamppb.New(r.CreatedAt), UpdatedAt: timestamppb.New(r.UpdatedAt),
		FinishedAt: optTime(r.FinishedAt),
	}
	for _, w := range r.Waves {
		out.Waves = append(out.Waves, &convergev1.RolloutWave{
			Index: w.Wave, Selector: w.Selector, State: w.State, Counts: toRolloutCounts(w.Counts),
			StartedAt: optTime(w.StartedAt), FinishedAt: optTime(w.FinishedAt), NotBefore: optTime(w.NotBefore),
		})
	}
	for _, f := range r.Failures {
		out.Failures = append(out.Failures, &convergev1.RolloutFailure{Wave: f.Wave, Reason: f.Reason,
			Resource: &convergev1.ResourceRef{Namespace: f.Namespace, Kind: r.Kind, Name: f.Name}})
	}
	return out
}

func toRolloutCounts(c store.RolloutCounts) *convergev1.RolloutCounts {
	return &convergev1.RolloutCounts{Total: c.Total, Pending: c.Pending, Moving: c.Moving, Ready: c.Ready,
		Failed: c.Failed, Skipped: c.Skipped, RolledBack: c.RolledBack}
}

func optTime(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}
