package api

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conversion"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// ApplyKind creates or updates a kind version after checking every
// legality rule; the error lists each problem with its rule.
func (s *Service) ApplyKind(ctx context.Context, req *convergev1.ApplyKindRequest) (*convergev1.ApplyKindResponse, error) {
	var res *convergev1.ApplyKindResponse
	err := s.fenced(ctx, req.GetPlanId(), func(ctx context.Context) error {
		if err := s.checkKindPlan(ctx, req); err != nil {
			return err
		}
		var err error
		res, err = s.applyKind(ctx, req)
		return err
	})
	return res, err
}

func (s *Service) applyKind(ctx context.Context, req *convergev1.ApplyKindRequest) (*convergev1.ApplyKindResponse, error) {
	m := req.GetManifest()
	if _, err := manifest.Compile(m); err != nil {
		var merr *manifest.Error
		if errors.As(err, &merr) {
			return nil, connect.NewError(connect.CodeInvalidArgument, err)
		}
		return nil, invalid("manifest: %v", err)
	}
	if err := s.checkConversion(m); err != nil {
		return nil, err
	}
	stored := proto.CloneOf(m)
	stored.Policy, stored.Revision, stored.CreatedAt, stored.UpdatedAt = nil, 0, nil, nil
	canonical, err := manifest.Canonical(stored)
	if err != nil {
		return nil, invalid("manifest: %v", err)
	}
	next := store.Kind{
		Kind: m.GetKind(), Version: m.GetKindVersion(), Manifest: canonical, Policy: kinds.PolicyFromProto(m.GetPolicy()),
	}
	e, err := kinds.Compile(next)
	if err != nil {
		return nil, invalid("manifest: %v", err)
	}
	if err := s.requireKey(e); err != nil {
		return nil, err
	}
	next.ResyncEvery, next.ObserveEvery = e.ResyncInterval(), e.ObserveInterval()
	next.Actor = actor(ctx)
	row, result, err := s.store.ApplyKind(ctx, next, func(prev store.Kind) error { return stabilityGate(prev, m) })
	var breaking *breakingError
	if errors.As(err, &breaking) {
		return nil, connect.NewError(connect.CodeAlreadyExists, breaking)
	}
	if err != nil {
		return nil, storeError(err)
	}
	if result != "unchanged" {
		if err := s.kinds.Refresh(ctx); err != nil {
			s.log.Warn("refreshing kinds after apply failed", "err", err)
		}
		s.publish(ctx, notify.Kinds)
	}
	if e, err = kinds.Compile(row); err != nil {
		return nil, storeError(err)
	}
	return &convergev1.ApplyKindResponse{Manifest: e.Manifest(), Result: result}, nil
}

// GetKind returns one kind version.
func (s *Service) GetKind(ctx context.Context, req *convergev1.GetKindRequest) (*convergev1.GetKindResponse, error) {
	row, err := s.store.GetKind(ctx, req.GetKind(), req.GetKindVersion())
	if err != nil {
		return nil, storeError(err)
	}
	e, err := kinds.Compile(row)
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.GetKindResponse{Manifest: e.Manifest()}, nil
}

// ListKinds returns every kind version, or every version of one kind.
func (s *Service) ListKinds(ctx context.Context, req *convergev1.ListKindsRequest) (*convergev1.ListKindsResponse, error) {
	rows, err := s.store.ListKinds(ctx, req.GetKind())
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListKindsResponse{}
	for _, row := range rows {
		e, err := kinds.Compile(row)
		if err != nil {
			return nil, storeError(err)
		}
		out.Manifests = append(out.Manifests, e.Manifest())
	}
	return out, nil
}

// DeleteKind removes a kind version that no resource uses.
func (s *Service) DeleteKind(ctx context.Context, req *convergev1.DeleteKindRequest) (*convergev1.DeleteKindResponse, error) {
	if err := s.store.DeleteKind(ctx, req.GetKind(), req.GetKindVersion()); err != nil {
		return nil, storeError(err)
	}
	if err := s.kinds.Refresh(ctx); err != nil {
		s.log.Warn("refreshing kinds after delete failed", "err", err)
	}
	s.publish(ctx, notify.Kinds)
	return &convergev1.DeleteKindResponse{}, nil
}

// checkConversion type-checks a manifest's conversion against the spec
// schema of the version it converts from, as registered now, and its own.
func (s *Service) checkConversion(m *convergev1.KindManifest) error {
	c := m.GetConversion()
	if c == nil {
		return nil
	}
	if err := conversion.CheckVersions(c.GetFromVersion(), m.GetKindVersion()); err != nil {
		return invalid("manifest: %v", err)
	}
	from := conversion.FromVersion(c.GetFromVersion(), m.GetKindVersion())
	old := s.kinds.Get(m.GetKind(), from)
	if old == nil {
		return invalid("manifest: conversion.from_version: kind %s v%d is not registered; apply it first, since the conversion is checked against its spec_schema",
			m.GetKind(), from)
	}
	_, err := conversion.Compile(from, m.GetKindVersion(), c.GetExpr(),
		old.Compiled.Manifest.GetSpecSchema().AsMap(), m.GetSpecSchema().AsMap())
	if err != nil {
		return invalid("manifest: %v", err)
	}
	return nil
}
