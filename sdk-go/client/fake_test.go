package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// fakeControl is an in-memory ControlService with just enough behaviour for
// GetResource and Watch: a change log whose index is the cursor, live
// subscribers, and switches to break or hold streams.
type fakeControl struct {
	convergev1connect.UnimplementedControlServiceHandler

	mu        sync.Mutex
	resources map[string]*convergev1.Resource
	log       []*convergev1.Change
	subs      map[int]*subscriber
	nextSub   int
	watchReqs []*convergev1.WatchRequest
	headers   []http.Header
	hold      chan struct{} // while non-nil, new Watch calls wait for it to close
	watchErr  error         // returned by Watch before registering
	ops       map[string]*convergev1.Operation

	registered chan *convergev1.WatchRequest // one value per registered stream
	gets       chan string                   // one value per GetResource call
}

type subscriber struct {
	req  *convergev1.WatchRequest
	ch   chan *convergev1.Change
	kill chan struct{}
}

func newFake(t *testing.T) (*fakeControl, string) {
	t.Helper()
	f := &fakeControl{
		resources:  map[string]*convergev1.Resource{},
		subs:       map[int]*subscriber{},
		ops:        map[string]*convergev1.Operation{},
		registered: make(chan *convergev1.WatchRequest, 16),
		gets:       make(chan string, 64),
	}
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewControlServiceHandler(f))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func key(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

// put stores a resource and records a change for it.
func (f *fakeControl) put(r *convergev1.Resource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key(r.Namespace, r.Kind, r.Name)
	typ := "updated"
	prev := ""
	if old, ok := f.resources[k]; ok {
		prev = old.Phase
	} else {
		typ = "created"
	}
	f.resources[k] = r
	f.emit(&convergev1.Change{Type: typ, Namespace: r.Namespace, Kind: r.Kind, Name: r.Name, Phase: r.Phase, PreviousPhase: prev})
}

// quietly replaces a stored resource without a change on the Watch
// stream, as the server does when a reconcile leaves the phase as it was.
func (f *fakeControl) quietly(r *convergev1.Resource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resources[key(r.Namespace, r.Kind, r.Name)] = r
}

func (f *fakeControl) remove(ns, kind, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.resources[key(ns, kind, name)]
	delete(f.resources, key(ns, kind, name))
	f.emit(&convergev1.Change{Type: "deleted", Namespace: ns, Kind: kind, Name: name, PreviousPhase: old.GetPhase()})
}

// emit appends to the log and fans out; f.mu is held.
func (f *fakeControl) emit(ch *convergev1.Change) {
	f.log = append(f.log, ch)
	ch.Cursor = strconv.Itoa(len(f.log))
	for _, s := range f.subs {
		if matches(s.req, ch) {
			s.ch <- ch
		}
	}
}

func matches(req *convergev1.WatchRequest, ch *convergev1.Change) bool {
	return (req.Namespace == "" || req.Namespace == ch.Namespace) &&
		(req.Kind == "" || req.Kind == ch.Kind) &&
		(req.Name == "" || req.Name == ch.Name)
}

// breakStreams ends every open stream with Unavailable.
func (f *fakeControl) breakStreams() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, s := range f.subs {
		close(s.kill)
		delete(f.subs, id)
	}
}

func (f *fakeControl) holdWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hold = make(chan struct{})
}

func (f *fakeControl) releaseWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.hold)
	f.hold = nil
}

func (f *fakeControl) GetResource(_ context.Context, req *convergev1.GetResourceRequest) (*convergev1.GetResourceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := key(req.Namespace, req.Kind, req.Name)
	select {
	case f.gets <- k:
	default:
	}
	r, ok := f.resources[k]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no such resource"))
	}
	return &convergev1.GetResourceResponse{Resource: r}, nil
}

// setOperation stores an operation as GetOperation will return it.
func (f *fakeControl) setOperation(op *convergev1.Operation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ops[op.Id] = op
}

func (f *fakeControl) GetOperation(_ context.Context, req *convergev1.GetOperationRequest) (*convergev1.GetOperationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case f.gets <- "operation " + req.Id:
	default:
	}
	op, ok := f.ops[req.Id]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("operation "+req.Id+" not found"))
	}
	return &convergev1.GetOperationResponse{Operation: op}, nil
}

func (f *fakeControl) Watch(ctx context.Context, req *convergev1.WatchRequest, stream *connect.ServerStream[convergev1.WatchResponse]) error {
	f.mu.Lock()
	f.watchReqs = append(f.watchReqs, req)
	f.headers = append(f.headers, stream.Conn().RequestHeader().Clone())
	hold, watchErr := f.hold, f.watchErr
	f.mu.Unlock()
	if watchErr != nil {
		return watchErr
	}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}

	f.mu.Lock()
	s := &subscriber{req: req, ch: make(chan *convergev1.Change, 256), kill: make(chan struct{})}
	id := f.nextSub
	f.nextSub++
	f.subs[id] = s
	var backlog []*convergev1.Change
	if req.Cursor != "" {
		from, err := strconv.Atoi(req.Cursor)
		if err != nil || from > len(f.log) {
			delete(f.subs, id)
			f.mu.Unlock()
			return connect.NewError(connect.CodeInvalidArgument, errors.New("cursor: unknown"))
		}
		for _, ch := range f.log[from:] {
			if matches(req, ch) {
				backlog = append(backlog, ch)
			}
		}
	}
	head := strconv.Itoa(len(f.log))
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}()

	cursor := req.Cursor
	if cursor == "" {
		cursor = head
	}
	if err := stream.Send(&convergev1.WatchResponse{Heartbeat: true, Cursor: cursor}); err != nil {
		return err
	}
	f.registered <- req
	for _, ch := range backlog {
		if err := stream.Send(&convergev1.WatchResponse{Changes: []*convergev1.Change{ch}, Cursor: ch.Cursor}); err != nil {
			return err
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.kill:
			return connect.NewError(connect.CodeUnavailable, errors.New("stream broken by test"))
		case ch := <-s.ch:
			if err := stream.Send(&convergev1.WatchResponse{Changes: []*convergev1.Change{ch}, Cursor: ch.Cursor}); err != nil {
				return err
			}
		}
	}
}

// waitGet waits for the next GetResource call, or fails the test.
func (f *fakeControl) waitGet(t *testing.T) string {
	t.Helper()
	select {
	case k := <-f.gets:
		return k
	case <-time.After(10 * time.Second):
		t.Fatal("no GetResource call within 10s")
		return ""
	}
}

// waitRegistered returns the next registered Watch request, or fails the test.
func (f *fakeControl) waitRegistered(t *testing.T) *convergev1.WatchRequest {
	t.Helper()
	select {
	case req := <-f.registered:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("no Watch stream registered within 10s")
		return nil
	}
}
