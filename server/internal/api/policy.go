package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/notify"
)

// UpdateKindPolicy changes a kind version's policy live: caps, deadlines,
// intervals and grace windows take effect on every replica within a
// second, with no re-apply of the manifest and no restart. The manifest
// revision stays the same, so tasks in flight keep their results.
func (s *Service) UpdateKindPolicy(ctx context.Context, req *convergev1.UpdateKindPolicyRequest) (*convergev1.UpdateKindPolicyResponse, error) {
	row, err := s.store.GetKind(ctx, req.GetKind(), req.GetKindVersion())
	if err != nil {
		return nil, storeError(err)
	}
	cur, err := kinds.Compile(row)
	if err != nil {
		return nil, storeError(err)
	}
	policy, err := mergePolicy(cur.Manifest().GetPolicy(), req.GetPolicy(), req.GetUpdateMask().GetPaths())
	if err != nil {
		return nil, err
	}
	next := proto.CloneOf(cur.Manifest())
	next.Policy = policy
	if _, err := manifest.Compile(next); err != nil {
		var merr *manifest.Error
		if errors.As(err, &merr) {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("with this policy the manifest breaks a rule: %w", err))
		}
		return nil, invalid("policy: %v", err)
	}
	row.Policy = kinds.PolicyFromProto(policy)
	e, err := kinds.Compile(row)
	if err != nil {
		return nil, invalid("policy: %v", err)
	}
	updated, err := s.store.UpdateKindPolicy(ctx, actor(ctx), row.Kind, row.Version, row.Revision, row.Policy, e.ResyncInterval(), e.ObserveInterval())
	if err != nil {
		return nil, storeError(err)
	}
	if err := s.kinds.Refresh(ctx); err != nil {
		s.log.Warn("refreshing kinds after a policy update failed", "err", err)
	}
	s.publish(ctx, notify.Kinds)
	out, err := kinds.Compile(updated)
	if err != nil {
		return nil, storeError(err)
	}
	s.log.Info("kind policy updated", "kind", row.Kind, "version", row.Version, "by", actor(ctx),
		"fields", strings.Join(req.GetUpdateMask().GetPaths(), ","))
	return &convergev1.UpdateKindPolicyResponse{Manifest: out.Manifest()}, nil
}

// mergePolicy copies the masked fields of update onto cur (every field
// when the mask is empty). Unknown paths are refused, naming the fields
// there are.
func mergePolicy(cur, update *convergev1.KindPolicy, paths []string) (*convergev1.KindPolicy, error) {
	if len(paths) == 0 {
		return proto.CloneOf(update), nil
	}
	out := proto.CloneOf(cur)
	if out == nil {
		out = &convergev1.KindPolicy{}
	}
	src, dst := update.ProtoReflect(), out.ProtoReflect()
	fields := src.Descriptor().Fields()
	for i, p := range paths {
		fd := fields.ByName(protoName(p))
		if fd == nil {
			var names []string
			for j := 0; j < fields.Len(); j++ {
				names = append(names, string(fields.Get(j).Name()))
			}
			return nil, invalid("update_mask.paths[%d]: %q is not a policy field; the fields are %s", i, p, strings.Join(names, ", "))
		}
		if src.Has(fd) {
			dst.Set(fd, src.Get(fd))
		} else {
			dst.Clear(fd)
		}
	}
	return out, nil
}

// protoName accepts a mask path as a proto field name, optionally under
// "policy." (max_inflight or policy.max_inflight).
func protoName(p string) protoreflect.Name {
	return protoreflect.Name(strings.TrimPrefix(p, "policy."))
}
