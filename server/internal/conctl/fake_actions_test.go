package conctl_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/testkit"
)

// The fake's spec history, operator actions, operations and kind policy
// edits.

// addRevision records a spec revision of a stored resource as the newest.
func (f *fakeControl) addRevision(ns, kind, name string, rev *convergev1.Revision) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := rkey(ns, kind, name)
	f.revisions[k] = append([]*convergev1.Revision{rev}, f.revisions[k]...)
}

func (f *fakeControl) GetResourceHistory(_ context.Context, req *convergev1.GetResourceHistoryRequest) (*convergev1.GetResourceHistoryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.historyReq = append(f.historyReq, proto.CloneOf(req))
	k := rkey(req.Namespace, req.Kind, req.Name)
	if _, ok := f.resources[k]; !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s not found", k))
	}
	revs := f.revisions[k]
	from := 0
	if req.PageToken != "" {
		from, _ = strconv.Atoi(req.PageToken)
	}
	size := int(req.PageSize)
	if size == 0 {
		size = 20
	}
	resp := &convergev1.GetResourceHistoryResponse{Keep: f.keep}
	for _, r := range revs[min(from, len(revs)):min(from+size, len(revs))] {
		resp.Revisions = append(resp.Revisions, proto.CloneOf(r))
	}
	if from+size < len(revs) {
		resp.NextPageToken = strconv.Itoa(from + size)
	}
	return resp, nil
}

func (f *fakeControl) RollbackResource(_ context.Context, req *convergev1.RollbackResourceRequest) (*convergev1.RollbackResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, proto.CloneOf(req))
	k := rkey(req.Namespace, req.Kind, req.Name)
	r, ok := f.resources[k]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s not found", k))
	}
	var target *convergev1.Revision
	for _, rev := range f.revisions[k] {
		if rev.Generation == req.Generation {
			target = rev
		}
	}
	if target == nil {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
			"revision %d of %s is not kept (the last %d revisions are); see conctl history", req.Generation, k, f.keep))
	}
	r.Spec = proto.CloneOf(target.Spec)
	r.Generation++
	r.Phase = "Reconciling"
	r.ResourceVersion++
	f.revisions[k] = append([]*convergev1.Revision{{
		Generation: r.Generation, KindVersion: r.KindVersion, Spec: proto.CloneOf(r.Spec),
		Source: "rollback", Actor: "api:test", Time: timestamppb.New(testNow),
	}}, f.revisions[k]...)
	f.emit(&convergev1.Change{Type: "updated", Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Phase: r.Phase,
		Generation: r.Generation, SyncedGeneration: r.SyncedGeneration, ResourceVersion: r.ResourceVersion})
	return &convergev1.RollbackResourceResponse{Resource: proto.CloneOf(r)}, nil
}

// actOn finds the resource an operator action names; f.mu is held.
func (f *fakeControl) actOn(rpc string, req proto.Message, ns, kind, name string) (*convergev1.Resource, error) {
	f.actions = append(f.actions, proto.CloneOf(req))
	if err := f.checkFail(rpc); err != nil {
		return nil, err
	}
	r, ok := f.resources[rkey(ns, kind, name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s not found", rkey(ns, kind, name)))
	}
	return r, nil
}

func (f *fakeControl) QuarantineResource(_ context.Context, req *convergev1.QuarantineResourceRequest) (*convergev1.QuarantineResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.actOn("QuarantineResource", req, req.Namespace, req.Kind, req.Name)
	if err != nil {
		return nil, err
	}
	r.Phase = "Quarantined"
	r.ResourceVersion++
	return &convergev1.QuarantineResourceResponse{Resource: proto.CloneOf(r)}, nil
}

func (f *fakeControl) UnquarantineResource(_ context.Context, req *convergev1.UnquarantineResourceRequest) (*convergev1.UnquarantineResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.actOn("UnquarantineResource", req, req.Namespace, req.Kind, req.Name)
	if err != nil {
		return nil, err
	}
	r.Phase = "Reconciling"
	r.ResourceVersion++
	return &convergev1.UnquarantineResourceResponse{Resource: proto.CloneOf(r)}, nil
}

func (f *fakeControl) ReconcileResource(_ context.Context, req *convergev1.ReconcileResourceRequest) (*convergev1.ReconcileResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, err := f.actOn("ReconcileResource", req, req.Namespace, req.Kind, req.Name)
	if err != nil {
		return nil, err
	}
	return &convergev1.ReconcileResourceResponse{Resource: proto.CloneOf(r)}, nil
}

// gets counts the GetResource calls so far.
func (f *fakeControl) gets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resourceGets
}

// reconciled records a finished reconcile without a change on the Watch
// stream, as the server does when the phase stays the same.
func (f *fakeControl) reconciled(ns, kind, name, phase string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.resources[rkey(ns, kind, name)]
	r.Reconciles++
	r.ResourceVersion++
	r.Phase = phase
	r.SyncedGeneration = r.Generation
}

func (f *fakeControl) InvokeOperation(_ context.Context, req *convergev1.InvokeOperationRequest) (*convergev1.InvokeOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.actOn("InvokeOperation", req, req.Namespace, req.Kind, req.Name); err != nil {
		return nil, err
	}
	op := &convergev1.Operation{
		Id:       fmt.Sprintf("op-%d", len(f.opOrder)+1),
		Resource: &convergev1.ResourceRef{Namespace: req.Namespace, Kind: req.Kind, Name: req.Name},
		Verb:     req.Verb, Input: req.Input, State: "pending", Actor: "api:test", Reason: req.Reason,
		RequestedAt: timestamppb.New(testNow.Add(-time.Minute)),
	}
	f.ops[op.Id] = op
	f.opOrder = append(f.opOrder, op.Id)
	return &convergev1.InvokeOperationResponse{Operation: proto.CloneOf(op)}, nil
}

// addOperation stores an operation as is.
func (f *fakeControl) addOperation(op *convergev1.Operation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[op.Id] = op
	f.opOrder = append(f.opOrder, op.Id)
}

// updateOperation changes a stored operation under the lock.
func (f *fakeControl) updateOperation(id string, change func(*convergev1.Operation)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f.ops[id])
}

// waitOperationGet waits for the next GetOperation call.
func (f *fakeControl) waitOperationGet(t *testing.T) string {
	t.Helper()
	return testkit.Receive(t, f.opGets, "a GetOperation call")
}

func (f *fakeControl) GetOperation(_ context.Context, req *convergev1.GetOperationRequest) (*convergev1.GetOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case f.opGets <- req.Id:
	default:
	}
	op, ok := f.ops[req.Id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("operation %q not found", req.Id))
	}
	return &convergev1.GetOperationResponse{Operation: proto.CloneOf(op)}, nil
}

func (f *fakeControl) ListOperations(_ context.Context, req *convergev1.ListOperationsRequest) (*convergev1.ListOperationsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkFail("ListOperations"); err != nil {
		return nil, err
	}
	resp := &convergev1.ListOperationsResponse{}
	for i := len(f.opOrder) - 1; i >= 0; i-- {
		op := f.ops[f.opOrder[i]]
		ref := op.Resource
		if ref.Namespace == req.Namespace && ref.Kind == req.Kind && ref.Name == req.Name && len(resp.Operations) < 100 {
			resp.Operations = append(resp.Operations, proto.CloneOf(op))
		}
	}
	return resp, nil
}

func (f *fakeControl) UpdateKindPolicy(_ context.Context, req *convergev1.UpdateKindPolicyRequest) (*convergev1.UpdateKindPolicyResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.policyReqs = append(f.policyReqs, proto.CloneOf(req))
	m, ok := f.kinds[fmt.Sprintf("%s/%d", req.Kind, req.KindVersion)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("kind %s/v%d not found", req.Kind, req.KindVersion))
	}
	if m.Policy == nil {
		m.Policy = &convergev1.KindPolicy{}
	}
	dst, src := m.Policy.ProtoReflect(), req.Policy.ProtoReflect()
	for _, path := range req.GetUpdateMask().GetPaths() {
		fd := dst.Descriptor().Fields().ByName(protoreflect.Name(path))
		if fd == nil {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("update_mask: unknown field %q", path))
		}
		dst.Set(fd, src.Get(fd))
	}
	m.Revision++
	return &convergev1.UpdateKindPolicyResponse{Manifest: proto.CloneOf(m)}, nil
}
