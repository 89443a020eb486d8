package api

import (
	"context"
	"errors"
	"sort"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/store"
)

// errNoMembers: a service built without a membership tracker (tests).
var errNoMembers = errors.New("cluster membership is not tracked by this server")

// policyKey carries the authorization policy from the authorizer to
// WhoAmI, which reports what the policy grants the caller.
type policyKey struct{}

// CountResources counts resources by phase, filtered like ListResources.
func (s *Service) CountResources(ctx context.Context, req *convergev1.CountResourcesRequest) (*convergev1.CountResourcesResponse, error) {
	sel, err := labels.Parse(req.GetLabelSelector())
	if err != nil {
		return nil, invalid("label_selector: %v", err)
	}
	counts, err := s.store.CountResources(ctx, store.ListFilter{
		Namespace: req.GetNamespace(), Kind: req.GetKind(), KindVersion: req.GetKindVersion(), Selector: sel,
		NameContains: req.GetNameContains(), Visible: s.visible(ctx),
	})
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.CountResourcesResponse{Phases: counts}
	for _, n := range counts {
		out.Total += n
	}
	return out, nil
}

// WhoAmI reports the caller as the authorizer identified it.
func (s *Service) WhoAmI(ctx context.Context, _ *convergev1.WhoAmIRequest) (*convergev1.WhoAmIResponse, error) {
	out := &convergev1.WhoAmIResponse{}
	out.Identity, _ = authz.CallerFrom(ctx)
	if p, ok := ctx.Value(policyKey{}).(*authz.Policy); ok && p.Enabled() {
		out.AuthorizationEnabled = true
		out.Roles = p.Roles(out.Identity)
		out.Teams = p.Teams(out.Identity)
		out.Grants = p.Grants(out.Identity)
	}
	return out, nil
}

// GetCluster lists the live replicas as of this replica's last heartbeat,
// with what their workers serve and their shard tile of each kind version.
func (s *Service) GetCluster(ctx context.Context, _ *convergev1.GetClusterRequest) (*convergev1.GetClusterResponse, error) {
	if s.members == nil {
		return nil, connect.NewError(connect.CodeUnavailable, errNoMembers)
	}
	live := s.members.Live()
	out := &convergev1.GetClusterResponse{Shards: store.Shards}
	for _, m := range live {
		cm := &convergev1.ClusterMember{
			Id: m.ID, Roles: m.Roles, Hostname: m.Hostname, Pid: int32(m.PID), Version: m.Version,
			StartedAt: timestamppb.New(m.StartedAt), HeartbeatAt: timestamppb.New(m.HeartbeatAt),
		}
		for _, sv := range m.Served {
			lo, hi := members.TileOf(live, m.ID, sv.Kind, sv.Version)
			cm.Served = append(cm.Served, &convergev1.ServedReaction{
				Kind: sv.Kind, KindVersion: sv.Version, Reaction: sv.Reaction,
				Workers: int32(sv.Workers), Capacity: int32(sv.Capacity), NotReady: sv.NotReady,
				ShardLo: int32(lo), ShardHi: int32(hi),
			})
		}
		sort.Slice(cm.Served, func(i, j int) bool {
			a, b := cm.Served[i], cm.Served[j]
			if a.Kind != b.Kind {
				return a.Kind < b.Kind
			}
			if a.KindVersion != b.KindVersion {
				return a.KindVersion < b.KindVersion
			}
			return a.Reaction < b.Reaction
		})
		out.Members = append(out.Members, cm)
	}
	if err := s.clusterLogLevel(ctx, out); err != nil {
		return nil, storeError(err)
	}
	return out, nil
}
