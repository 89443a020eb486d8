package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// defaultHistoryPage is the page size of GetResourceHistory when the
// request names none.
const defaultHistoryPage = 20

// GetResourceHistory returns a resource's kept spec revisions, newest first.
func (s *Service) GetResourceHistory(ctx context.Context, req *convergev1.GetResourceHistoryRequest) (*convergev1.GetResourceHistoryResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	limit := int(req.GetPageSize())
	if limit == 0 {
		limit = defaultHistoryPage
	}
	var before int64
	if tok := req.GetPageToken(); tok != "" {
		var err error
		if before, err = decodeHistoryToken(tok); err != nil {
			return nil, invalid("page_token: %v", err)
		}
	}
	page, err := s.store.ResourceHistory(ctx, key, before, limit)
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.GetResourceHistoryResponse{Keep: page.Keep}
	for _, r := range page.Revisions {
		out.Revisions = append(out.Revisions, toRevision(r))
	}
	if page.More {
		out.NextPageToken = encodeHistoryToken(page.Revisions[len(page.Revisions)-1].Generation)
	}
	return out, nil
}

// A history page token is the generation the next page continues below.
func encodeHistoryToken(generation int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("g" + strconv.FormatInt(generation, 10)))
}

func decodeHistoryToken(tok string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil && len(raw) > 1 && raw[0] == 'g' {
		if g, err := strconv.ParseInt(string(raw[1:]), 10, 64); err == nil && g > 0 {
			return g, nil
		}
	}
	return 0, fmt.Errorf("%q is not a page token this server issued", tok)
}

// RollbackResource applies the spec of an earlier generation again, at
// the kind version it had then, as a new generation.
func (s *Service) RollbackResource(ctx context.Context, req *convergev1.RollbackResourceRequest) (*convergev1.RollbackResourceResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	rb := store.Rollback{Key: key, Generation: req.GetGeneration(), Actor: actor(ctx), Reason: req.GetReason(),
		Check: func(version int32, spec []byte) (int64, error) {
			e := s.kinds.Get(key.Kind, version)
			if e == nil {
				return -1, nil // not known here yet: the store reports the kind stale
			}
			doc, err := schema.Decode(spec)
			if err == nil {
				doc, err = openStored(ctx, s.kinds, doc)
			}
			if err == nil {
				err = e.ValidateSpec(doc)
			}
			if err != nil {
				return 0, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
					"generation %d of %s/%s/%s: its spec does not match the spec_schema of %s v%d: %v",
					req.GetGeneration(), key.Namespace, key.Kind, key.Name, key.Kind, version, err))
			}
			return e.Revision, nil
		}}
	var changed bool
	err := s.retryStaleKind(ctx, func(bool) error {
		var err error
		changed, err = s.store.RollbackResource(ctx, rb)
		return err
	})
	if err != nil {
		var ce *connect.Error
		if errors.As(err, &ce) {
			return nil, ce
		}
		return nil, configError(err)
	}
	if changed {
		s.publish(ctx, notify.Tasks)
		s.publish(ctx, notify.Changes)
	}
	r, err := s.store.GetResource(ctx, key.Namespace, key.Kind, key.Name)
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.RollbackResourceResponse{Resource: toResource(r, s.isParked)}, nil
}

func toRevision(r store.Revision) *convergev1.Revision {
	return &convergev1.Revision{
		Generation: r.Generation, KindVersion: r.KindVersion, Spec: toStruct(r.Spec),
		Source: r.Source, Actor: r.Actor, Time: timestamppb.New(r.At),
	}
}
