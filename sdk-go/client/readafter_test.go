package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// A client sends back the greatest token it has been answered with, and
// leaves a token the caller set alone.
func TestReadAfterSendsTheLatestToken(t *testing.T) {
	ra := &readAfter{}
	var sent []string
	answer := ""
	call := ra.WrapUnary(func(_ context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		sent = append(sent, req.Header().Get(ReadAfterHeader))
		resp := connect.NewResponse(&convergev1.GetResourceResponse{})
		if answer != "" {
			resp.Header().Set(ReadAfterHeader, answer)
		}
		return resp, nil
	})
	do := func(answerWith string) {
		answer = answerWith
		if _, err := call(context.Background(), connect.NewRequest(&convergev1.GetResourceRequest{})); err != nil {
			t.Fatal(err)
		}
	}
	do("00000000000000a0") // a write
	do("")                 // a read the replica served
	do("0000000000000090") // an older token, from a call that overlapped
	do("bogus")            // not a token of this width
	do("")
	want := []string{"", "00000000000000a0", "00000000000000a0", "00000000000000a0", "00000000000000a0"}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("call %d sent %q; want %q (all sent: %q)", i, sent[i], want[i], sent)
		}
	}
	req := connect.NewRequest(&convergev1.GetResourceRequest{})
	req.Header().Set(ReadAfterHeader, "0000000000000001")
	if _, err := call(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := sent[len(sent)-1]; got != "0000000000000001" {
		t.Errorf("the caller's own token was replaced by %q", got)
	}
}

// tokens answers every call and stream with the next token, as the
// server's read router does.
type tokens struct{ next []string }

func (s *tokens) pop() string {
	tok := s.next[0]
	s.next = s.next[1:]
	return tok
}

func (s *tokens) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		resp, err := next(ctx, req)
		if err == nil {
			resp.Header().Set(ReadAfterHeader, s.pop())
		}
		return resp, err
	}
}

func (s *tokens) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (s *tokens) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		conn.ResponseHeader().Set(ReadAfterHeader, s.pop())
		return next(ctx, conn)
	}
}

type watchOnce struct {
	convergev1connect.UnimplementedControlServiceHandler
}

func (watchOnce) GetResource(context.Context, *convergev1.GetResourceRequest) (*convergev1.GetResourceResponse, error) {
	return &convergev1.GetResourceResponse{}, nil
}

func (watchOnce) Watch(_ context.Context, _ *convergev1.WatchRequest, stream *connect.ServerStream[convergev1.WatchResponse]) error {
	return stream.Send(&convergev1.WatchResponse{})
}

// ReadAfterToken hands out the latest token, from calls and streams alike,
// so another client can be told to read what this one wrote.
func TestReadAfterTokenIsTheLatestSeen(t *testing.T) {
	srv := &tokens{next: []string{"00000000000000a0", "00000000000000b0", "0000000000000090"}}
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewControlServiceHandler(watchOnce{}, connect.WithInterceptors(srv)))
	hs := httptest.NewServer(mux)
	defer hs.Close()
	c := New(hs.URL)
	if got := c.ReadAfterToken(); got != "" {
		t.Fatalf("a new client's token is %q; want none", got)
	}
	ctx := context.Background()
	if _, err := c.GetResource(ctx, &convergev1.GetResourceRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := c.ReadAfterToken(); got != "00000000000000a0" {
		t.Fatalf("after a call the token is %q; want 00000000000000a0", got)
	}
	stream, err := c.Watch(ctx, &convergev1.WatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !stream.Receive() {
		t.Fatalf("watch: %v", stream.Err())
	}
	stream.Close()
	if got := c.ReadAfterToken(); got != "00000000000000b0" {
		t.Fatalf("after a stream the token is %q; want 00000000000000b0", got)
	}
	if _, err := c.GetResource(ctx, &convergev1.GetResourceRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := c.ReadAfterToken(); got != "00000000000000b0" {
		t.Fatalf("an older token replaced the latest: %q", got)
	}
}
