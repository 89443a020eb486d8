package api

import (
	"context"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

// OnLogLevel is called after SetLogLevel stored a level, so the replica
// that took the call applies it at once; the others follow within a
// heartbeat.
func (s *Service) OnLogLevel(f func(context.Context)) { s.onLogLevel = f }

// SetLogLevel sets (or, with an empty level, resets) the log level of
// every replica.
func (s *Service) SetLogLevel(ctx context.Context, req *convergev1.SetLogLevelRequest) (*convergev1.SetLogLevelResponse, error) {
	prev, _, err := s.store.ClusterSetting(ctx, store.SettingLogLevel)
	if err != nil {
		return nil, storeError(err)
	}
	if err := s.store.SetClusterSetting(ctx, store.SettingLogLevel, req.GetLevel(), actor(ctx)); err != nil {
		return nil, storeError(err)
	}
	s.log.Info("cluster log level set", "level", req.GetLevel(), "previous", prev.Value, "by", actor(ctx))
	if s.onLogLevel != nil {
		s.onLogLevel(ctx)
	}
	return &convergev1.SetLogLevelResponse{Level: req.GetLevel(), Previous: prev.Value}, nil
}

// clusterLogLevel fills the cluster answer's log level fields.
func (s *Service) clusterLogLevel(ctx context.Context, out *convergev1.GetClusterResponse) error {
	st, ok, err := s.store.ClusterSetting(ctx, store.SettingLogLevel)
	if err != nil || !ok {
		return err
	}
	out.LogLevel, out.LogLevelSetBy, out.LogLevelSetAt = st.Value, st.SetBy, timestamppb.New(st.SetAt)
	return nil
}
