package conctl_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/conctl"
	"github.com/convergehq/converge/server/internal/testkit"
)

// testNow is the clock every test runs at.
var testNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// fakeControl is an in-memory ControlService: kinds, resources, events, a
// change log whose index is the watch cursor, and a record of calls.
type fakeControl struct {
	convergev1connect.UnimplementedControlServiceHandler

	mu        sync.Mutex
	calls     []string
	kinds     map[string]*convergev1.KindManifest
	resources map[string]*convergev1.Resource
	events    []*convergev1.Event // newest first
	log       []*convergev1.Change
	subs      map[int]chan *convergev1.Change
	nextSub   int
	listReqs  []*convergev1.ListResourcesRequest
	batchErr  error                                           // ApplyResources fails with it when set
	maxPage   int                                             // ListResources never returns more than this
	trees     map[string]*convergev1.TreeNode                 // whole trees, cut to each request
	graphs    map[string]*convergev1.GetResourceGraphResponse // whole graphs, cut to max_nodes
	treeReqs  []*convergev1.GetResourceTreeRequest
	graphReqs []*convergev1.GetResourceGraphRequest
	explained map[string]*convergev1.ExplainResourceResponse

	registered chan *convergev1.WatchRequest

	lifecycle // provider configs, bindings, history, operations: fake_lifecycle_test.go
}

func newFake(t *testing.T) (*fakeControl, string) {
	t.Helper()
	f := &fakeControl{
		kinds:      map[string]*convergev1.KindManifest{},
		resources:  map[string]*convergev1.Resource{},
		subs:       map[int]chan *convergev1.Change{},
		trees:      map[string]*convergev1.TreeNode{},
		graphs:     map[string]*convergev1.GetResourceGraphResponse{},
		explained:  map[string]*convergev1.ExplainResourceResponse{},
		registered: make(chan *convergev1.WatchRequest, 16),
		maxPage:    100,
		lifecycle:  newLifecycle(),
	}
	_, url := testkit.ServeControl(t, f)
	return f, url
}

func rkey(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

func (f *fakeControl) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeControl) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// add stores a resource as is, without a change.
func (f *fakeControl) add(r *convergev1.Resource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resources[rkey(r.Namespace, r.Kind, r.Name)] = r
}

// setPhase moves a resource to phase, as a worker's result would, and
// publishes the change. Ready syncs the generation; Failed records msg.
func (f *fakeControl) setPhase(ns, kind, name, phase, msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.resources[rkey(ns, kind, name)]
	prev := r.Phase
	r.Phase = phase
	r.ResourceVersion++
	r.Failure = nil
	switch phase {
	case "Ready":
		r.SyncedGeneration = r.Generation
	case "Failed":
		r.Failure = &convergev1.Failure{Message: msg, Attempts: 1, Terminal: true, Generation: r.Generation}
	}
	f.emit(&convergev1.Change{
		Type: "updated", Namespace: ns, Kind: kind, KindVersion: r.KindVersion, Name: name, Uid: r.Uid,
		Phase: phase, PreviousPhase: prev, Generation: r.Generation, SyncedGeneration: r.SyncedGeneration,
		ResourceVersion: r.ResourceVersion, Message: msg, Time: timestamppb.New(testNow),
	})
}

// remove finishes a deletion.
func (f *fakeControl) remove(ns, kind, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.resources[rkey(ns, kind, name)]
	delete(f.resources, rkey(ns, kind, name))
	f.emit(&convergev1.Change{Type: "deleted", Namespace: ns, Kind: kind, Name: name,
		PreviousPhase: r.GetPhase(), ResourceVersion: r.GetResourceVersion() + 1, Time: timestamppb.New(testNow)})
}

// emit logs a change and hands it to every subscriber; f.mu is held.
func (f *fakeControl) emit(ch *convergev1.Change) {
	f.log = append(f.log, ch)
	ch.Cursor = strconv.Itoa(len(f.log))
	for _, sub := range f.subs {
		sub <- ch
	}
}

func (f *fakeControl) waitRegistered(t *testing.T) *convergev1.WatchRequest {
	t.Helper()
	return testkit.Receive(t, f.registered, "a Watch stream to register")
}

func (f *fakeControl) ApplyKind(_ context.Context, req *convergev1.ApplyKindRequest) (*convergev1.ApplyKindResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := req.Manifest
	f.record("ApplyKind %s/%d", m.Kind, m.KindVersion)
	k := fmt.Sprintf("%s/%d", m.Kind, m.KindVersion)
	result := "created"
	if _, ok := f.kinds[k]; ok {
		result = "configured"
	}
	f.kinds[k] = proto.CloneOf(m)
	return &convergev1.ApplyKindResponse{Manifest: m, Result: result}, nil
}

func (f *fakeControl) GetKind(_ context.Context, req *convergev1.GetKindRequest) (*convergev1.GetKindResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.kinds[fmt.Sprintf("%s/%d", req.Kind, req.KindVersion)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("kind %s/v%d not found", req.Kind, req.KindVersion))
	}
	return &convergev1.GetKindResponse{Manifest: proto.CloneOf(m)}, nil
}

func (f *fakeControl) ListKinds(_ context.Context, req *convergev1.ListKindsRequest) (*convergev1.ListKindsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &convergev1.ListKindsResponse{}
	for _, m := range f.kinds {
		if req.Kind == "" || req.Kind == m.Kind {
			resp.Manifests = append(resp.Manifests, proto.CloneOf(m))
		}
	}
	return resp, nil
}

func (f *fakeControl) DeleteKind(_ context.Context, req *convergev1.DeleteKindRequest) (*convergev1.DeleteKindResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DeleteKind %s/%d", req.Kind, req.KindVersion)
	delete(f.kinds, fmt.Sprintf("%s/%d", req.Kind, req.KindVersion))
	return &convergev1.DeleteKindResponse{}, nil
}

func (f *fakeControl) ApplyResources(_ context.Context, req *convergev1.ApplyResourcesRequest) (*convergev1.ApplyResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ApplyResources %d", len(req.Resources))
	if f.batchErr != nil {
		return nil, f.batchErr
	}
	resp := &convergev1.ApplyResourcesResponse{}
	for _, in := range req.Resources {
		k := rkey(in.Namespace, in.Kind, in.Name)
		r, ok := f.resources[k]
		result := "configured"
		if !ok {
			result = "created"
			r = &convergev1.Resource{Namespace: in.Namespace, Kind: in.Kind, Name: in.Name, Uid: "uid-" + in.Name,
				CreatedAt: timestamppb.New(testNow.Add(-time.Minute))}
			f.resources[k] = r
		} else if proto.Equal(r.Spec, in.Spec) {
			result = "unchanged"
		}
		if result != "unchanged" {
			r.Generation++
			r.Phase = "Reconciling"
		}
		r.KindVersion, r.Labels, r.Spec, r.DeletionPolicy = in.KindVersion, in.Labels, in.Spec, in.DeletionPolicy
		r.ProviderConfig = in.ProviderConfig
		resp.Results = append(resp.Results, &convergev1.ApplyResult{
			Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Uid: r.Uid, Generation: r.Generation, Result: result,
		})
	}
	return resp, nil
}

func (f *fakeControl) GetResource(_ context.Context, req *convergev1.GetResourceRequest) (*convergev1.GetResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resourceGets++
	r, ok := f.resources[rkey(req.Namespace, req.Kind, req.Name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s/%s/%s not found", req.Namespace, req.Kind, req.Name))
	}
	return &convergev1.GetResourceResponse{Resource: proto.CloneOf(r)}, nil
}

func (f *fakeControl) ListResources(_ context.Context, req *convergev1.ListResourcesRequest) (*convergev1.ListResourcesResponse, error) {
	want, err := fakeSelector(req.LabelSelector)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listReqs = append(f.listReqs, proto.CloneOf(req))
	var keys []string
	for k, r := range f.resources {
		if (req.Namespace == "" || req.Namespace == r.Namespace) && (req.Kind == "" || req.Kind == r.Kind) &&
			(len(req.Phases) == 0 || contains(req.Phases, r.Phase)) && labelsMatch(r.Labels, want) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	from := 0
	if req.PageToken != "" {
		from, _ = strconv.Atoi(req.PageToken)
	}
	size := int(req.PageSize)
	if size == 0 || size > f.maxPage {
		size = f.maxPage
	}
	resp := &convergev1.ListResourcesResponse{}
	for _, k := range keys[min(from, len(keys)):min(from+size, len(keys))] {
		r := proto.CloneOf(f.resources[k])
		if req.Summary {
			r.Spec, r.Status = nil, nil
		}
		resp.Resources = append(resp.Resources, r)
	}
	if from+size < len(keys) {
		resp.NextPageToken = strconv.Itoa(from + size)
	}
	return resp, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (f *fakeControl) DeleteResource(_ context.Context, req *convergev1.DeleteResourceRequest) (*convergev1.DeleteResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("DeleteResource %s", rkey(req.Namespace, req.Kind, req.Name))
	r, ok := f.resources[rkey(req.Namespace, req.Kind, req.Name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("resource not found"))
	}
	r.Phase = "Deleting"
	r.DeletionRequestedAt = timestamppb.New(testNow)
	return &convergev1.DeleteResourceResponse{Resource: proto.CloneOf(r)}, nil
}

func (f *fakeControl) ListEvents(_ context.Context, req *convergev1.ListEventsRequest) (*convergev1.ListEventsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &convergev1.ListEventsResponse{}
	for _, e := range f.events {
		if (req.Namespace == "" || req.Namespace == e.Namespace) && (req.Kind == "" || req.Kind == e.Kind) &&
			(req.Name == "" || req.Name == e.Name) && len(resp.Events) < int(req.PageSize) {
			resp.Events = append(resp.Events, e)
		}
	}
	return resp, nil
}

func (f *fakeControl) Watch(ctx context.Context, req *convergev1.WatchRequest, stream *connect.ServerStream[convergev1.WatchResponse]) error {
	f.mu.Lock()
	ch := make(chan *convergev1.Change, 4096)
	id := f.nextSub
	f.nextSub++
	f.subs[id] = ch
	head := strconv.Itoa(len(f.log))
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}()
	if err := stream.Send(&convergev1.WatchResponse{Heartbeat: true, Cursor: head}); err != nil {
		return err
	}
	f.registered <- req
	for {
		select {
		case <-ctx.Done():
			return nil
		case c := <-ch:
			if (req.Namespace != "" && req.Namespace != c.Namespace) || (req.Kind != "" && req.Kind != c.Kind) ||
				(req.Name != "" && req.Name != c.Name) {
				continue
			}
			if err := stream.Send(&convergev1.WatchResponse{Changes: []*convergev1.Change{c}, Cursor: c.Cursor}); err != nil {
				return err
			}
		}
	}
}

// result is what one conctl run printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// run runs conctl against url with a fixed clock and no terminal.
func run(ctx context.Context, url, stdin string, args ...string) result {
	var out, errOut testkit.Buffer
	code := runWith(ctx, url, stdin, &out, &errOut, args...)
	return result{out.String(), errOut.String(), code}
}

func runWith(ctx context.Context, url, stdin string, out, errOut *testkit.Buffer, args ...string) int {
	env := map[string]string{"CONVERGE_SERVER": url}
	return conctl.Run(ctx, args,
		conctl.WithStdio(strings.NewReader(stdin), out, errOut),
		conctl.WithGetenv(func(k string) string { return env[k] }),
		conctl.WithClock(func() time.Time { return testNow }),
		conctl.WithTerminal(false),
	)
}

// background runs conctl in a goroutine; the returned buffers can be read
// while it runs and the channel yields its result.
func background(ctx context.Context, url, stdin string, args ...string) (*testkit.Buffer, *testkit.Buffer, <-chan result) {
	out, errOut := &testkit.Buffer{}, &testkit.Buffer{}
	done := make(chan result, 1)
	go func() {
		code := runWith(ctx, url, stdin, out, errOut, args...)
		done <- result{out.String(), errOut.String(), code}
	}()
	return out, errOut, done
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// fakeSelector parses the key=value terms of a label selector, the only
// form the fake knows.
func fakeSelector(selector string) (map[string]string, error) {
	want := map[string]string{}
	if selector == "" {
		return want, nil
	}
	for _, term := range strings.Split(selector, ",") {
		k, v, ok := strings.Cut(term, "=")
		if !ok {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("label_selector: the fake knows key=value only, got %q", term))
		}
		want[k] = v
	}
	return want, nil
}

func labelsMatch(labels, want map[string]string) bool {
	for k, v := range want {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}
