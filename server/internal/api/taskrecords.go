package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"

	"connectrpc.com/connect"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
)

// defaultTaskRecordPage is the page size of ListTaskRecords when the
// request names none.
const defaultTaskRecordPage = 20

// ListTaskRecords returns a resource's task records, newest first.
func (s *Service) ListTaskRecords(ctx context.Context, req *convergev1.ListTaskRecordsRequest) (*convergev1.ListTaskRecordsResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	limit := int(req.GetPageSize())
	if limit == 0 {
		limit = defaultTaskRecordPage
	}
	var before int64
	if tok := req.GetPageToken(); tok != "" {
		var err error
		if before, err = decodeRecordToken(tok); err != nil {
			return nil, invalid("page_token: %v", err)
		}
	}
	page, err := s.store.ListTaskRecords(ctx, key, before, limit)
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListTaskRecordsResponse{}
	for _, r := range page.Records {
		rec, err := toTaskRecord(r)
		if err != nil {
			return nil, err
		}
		out.Records = append(out.Records, rec)
	}
	if page.More {
		out.NextPageToken = encodeRecordToken(page.Records[len(page.Records)-1].ID)
	}
	return out, nil
}

// GetTaskRecord returns one task record whole.
func (s *Service) GetTaskRecord(ctx context.Context, req *convergev1.GetTaskRecordRequest) (*convergev1.GetTaskRecordResponse, error) {
	r, err := s.store.GetTaskRecord(ctx, req.GetId())
	if err != nil {
		return nil, storeError(err)
	}
	// Named by id, the record's namespace is known only now.
	if err := s.checkRead(ctx, "GetTaskRecord", r.Ref.Namespace, r.Ref.Kind); err != nil {
		return nil, err
	}
	rec, err := toTaskRecord(r)
	if err != nil {
		return nil, err
	}
	return &convergev1.GetTaskRecordResponse{Record: rec}, nil
}

// toTaskRecord converts a stored record; its input and result, when read,
// become their JSON documents here (taskrec.Document), the one place a
// stored record is read.
func toTaskRecord(r store.TaskRecord) (*convergev1.TaskRecord, error) {
	out := &convergev1.TaskRecord{
		Id: r.ID, Resource: &convergev1.ResourceRef{Namespace: r.Ref.Namespace, Kind: r.Ref.Kind, Name: r.Ref.Name},
		TaskId: r.TaskID, Trigger: r.Trigger, Generation: r.Generation, Attempt: r.Attempt, Worker: r.Worker,
		Session: r.Session, ClaimedAt: timestamppb.New(r.ClaimedAt), EndedAt: timestamppb.New(r.EndedAt),
		Outcome: r.Outcome, DiscardReason: r.DiscardReason, Failed: r.Failed, Terminal: r.Terminal,
		ErrorReason: r.ErrorReason, Error: r.Error, Children: r.Children, Truncated: r.Truncated,
	}
	if !r.DispatchedAt.IsZero() {
		out.DispatchedAt = timestamppb.New(r.DispatchedAt)
	}
	if r.Input != nil {
		in, res, err := taskrec.Document(r.Ref.Kind, r.Input, r.Result)
		if err != nil {
			return nil, connect.NewError(connect.CodeDataLoss, fmt.Errorf("task record %d: %w", r.ID, err))
		}
		out.Input, out.Result = toStruct(in), toStruct(res)
	}
	return out, nil
}

// A task record page token is the record id the next page continues
// below.
func encodeRecordToken(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("t" + strconv.FormatInt(id, 10)))
}

func decodeRecordToken(tok string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil && len(raw) > 1 && raw[0] == 't' {
		if id, err := strconv.ParseInt(string(raw[1:]), 10, 64); err == nil && id > 0 {
			return id, nil
		}
	}
	return 0, fmt.Errorf("%q is not a page token this server issued", tok)
}
