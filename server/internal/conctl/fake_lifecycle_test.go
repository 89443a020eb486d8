package conctl_test

import (
	"context"
	"fmt"
	"sort"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// lifecycle is the fake's state for provider configs, reactor bindings,
// spec history, operator actions and operations.
type lifecycle struct {
	configs    map[string]*convergev1.ProviderConfig
	bindings   map[string]*convergev1.ReactorBinding
	revisions  map[string][]*convergev1.Revision // newest first
	keep       int32
	ops        map[string]*convergev1.Operation
	opOrder    []string // oldest first
	opGets     chan string
	policyReqs []*convergev1.UpdateKindPolicyRequest
	historyReq []*convergev1.GetResourceHistoryRequest
	actions    []proto.Message  // the requests of rollback, quarantine, unquarantine, reconcile, invoke
	fail       map[string]error // an RPC named here fails with the error

	resourceGets int // GetResource calls
}

func newLifecycle() lifecycle {
	return lifecycle{
		configs:   map[string]*convergev1.ProviderConfig{},
		bindings:  map[string]*convergev1.ReactorBinding{},
		revisions: map[string][]*convergev1.Revision{},
		keep:      50,
		ops:       map[string]*convergev1.Operation{},
		opGets:    make(chan string, 256),
		fail:      map[string]error{},
	}
}

func pcKey(kind string, version int32, name string) string {
	return fmt.Sprintf("%s/%d/%s", kind, version, name)
}

// failing sets an RPC to fail with a connect error of code and msg.
func (f *fakeControl) failing(rpc string, code connect.Code, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[rpc] = connect.NewError(code, fmt.Errorf("%s", msg))
}

// checkFail returns the error set for rpc; f.mu is held.
func (f *fakeControl) checkFail(rpc string) error {
	return f.fail[rpc]
}

func (f *fakeControl) ApplyProviderConfig(_ context.Context, req *convergev1.ApplyProviderConfigRequest) (*convergev1.ApplyProviderConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := req.Config
	f.record("ApplyProviderConfig %s", pcKey(c.Kind, c.KindVersion, c.Name))
	if err := f.checkFail("ApplyProviderConfig"); err != nil {
		return nil, err
	}
	k := pcKey(c.Kind, c.KindVersion, c.Name)
	stored := proto.CloneOf(c)
	stored.CreatedAt, stored.UpdatedAt = timestamppb.New(testNow), timestamppb.New(testNow)
	result := "created"
	if old, ok := f.configs[k]; ok {
		result = "unchanged"
		stored.CreatedAt, stored.Revision, stored.UpdatedAt = old.CreatedAt, old.Revision, old.UpdatedAt
		if !proto.Equal(old.Config, c.Config) || old.Description != c.Description {
			result = "configured"
		}
	}
	if result != "unchanged" {
		stored.Revision++
	}
	f.configs[k] = stored
	return &convergev1.ApplyProviderConfigResponse{Config: proto.CloneOf(stored), Result: result}, nil
}

func (f *fakeControl) GetProviderConfig(_ context.Context, req *convergev1.GetProviderConfigRequest) (*convergev1.GetProviderConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.configs[pcKey(req.Kind, req.KindVersion, req.Name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("provider config %s/v%d/%s not found", req.Kind, req.KindVersion, req.Name))
	}
	return &convergev1.GetProviderConfigResponse{Config: proto.CloneOf(c)}, nil
}

func (f *fakeControl) ListProviderConfigs(_ context.Context, req *convergev1.ListProviderConfigsRequest) (*convergev1.ListProviderConfigsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListProviderConfigs %s/%d", req.Kind, req.KindVersion)
	resp := &convergev1.ListProviderConfigsResponse{}
	for _, c := range f.configs {
		if (req.Kind == "" || req.Kind == c.Kind) && (req.KindVersion == 0 || req.KindVersion == c.KindVersion) {
			resp.Configs = append(resp.Configs, proto.CloneOf(c))
		}
	}
	// The server's order is not promised; conctl sorts.
	sort.Slice(resp.Configs, func(i, j int) bool { return resp.Configs[i].Name > resp.Configs[j].Name })
	return resp, nil
}

func (f *fakeControl) DeleteProviderConfig(_ context.Context, req *convergev1.DeleteProviderConfigRequest) (*convergev1.DeleteProviderConfigResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := pcKey(req.Kind, req.KindVersion, req.Name)
	f.record("DeleteProviderConfig %s", k)
	if err := f.checkFail("DeleteProviderConfig"); err != nil {
		return nil, err
	}
	if _, ok := f.configs[k]; !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("provider config %s/v%d/%s not found", req.Kind, req.KindVersion, req.Name))
	}
	delete(f.configs, k)
	return &convergev1.DeleteProviderConfigResponse{}, nil
}

func (f *fakeControl) ApplyReactorBinding(_ context.Context, req *convergev1.ApplyReactorBindingRequest) (*convergev1.ApplyReactorBindingResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := req.Binding
	f.record("ApplyReactorBinding %s", b.Name)
	if err := f.checkFail("ApplyReactorBinding"); err != nil {
		return nil, err
	}
	stored := proto.CloneOf(b)
	stored.CreatedAt, stored.UpdatedAt = timestamppb.New(testNow), timestamppb.New(testNow)
	result := "created"
	if old, ok := f.bindings[b.Name]; ok {
		stored.CreatedAt, stored.Revision, stored.UpdatedAt = old.CreatedAt, old.Revision, old.UpdatedAt
		cmp := proto.CloneOf(old)
		cmp.CreatedAt, cmp.UpdatedAt, cmp.Revision = nil, nil, 0
		result = "configured"
		if proto.Equal(cmp, b) {
			result = "unchanged"
		}
	}
	if result != "unchanged" {
		stored.Revision++
	}
	f.bindings[b.Name] = stored
	return &convergev1.ApplyReactorBindingResponse{Binding: proto.CloneOf(stored), Result: result}, nil
}

func (f *fakeControl) GetReactorBinding(_ context.Context, req *convergev1.GetReactorBindingRequest) (*convergev1.GetReactorBindingResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.bindings[req.Name]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("reactor binding %q not found", req.Name))
	}
	return &convergev1.GetReactorBindingResponse{Binding: proto.CloneOf(b)}, nil
}

func (f *fakeControl) ListReactorBindings(_ context.Context, req *convergev1.ListReactorBindingsRequest) (*convergev1.ListReactorBindingsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListReactorBindings %s", req.WatchKind)
	resp := &convergev1.ListReactorBindingsResponse{}
	for _, b := range f.bindings {
		if req.WatchKind == "" || req.WatchKind == b.WatchKind {
			resp.Bindings = append(resp.Bindings, proto.CloneOf(b))
		}
	}
	sort.Slice(resp.Bindings, func(i, j int) bool { return resp.Bindings[i].Name > resp.Bindings[j].Name })
	return resp, nil
}

func (f *fakeControl) DeleteReactorBinding(_ context.Context, req *convergev1.DeleteReactorBindingRequest) (*convergev1.DeleteReactorBindingResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DeleteReactorBinding %s", req.Name)
	if _, ok := f.bindings[req.Name]; !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("reactor binding %q not found", req.Name))
	}
	delete(f.bindings, req.Name)
	return &convergev1.DeleteReactorBindingResponse{}, nil
}
