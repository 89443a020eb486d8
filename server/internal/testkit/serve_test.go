package testkit

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// TestServeControl: calls reach the handler through the options given,
// from the returned client and, over plain HTTP/1.1, at the returned URL.
func TestServeControl(t *testing.T) {
	var seen atomic.Int32
	count := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			seen.Add(1)
			return next(ctx, req)
		}
	})
	ctl, url := ServeControl(t, convergev1connect.UnimplementedControlServiceHandler{}, connect.WithInterceptors(count))
	_, err := ctl.ListKinds(context.Background(), &convergev1.ListKindsRequest{})
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("ListKinds: %v, want the handler's Unimplemented", err)
	}
	h1 := convergev1connect.NewControlServiceClient(http.DefaultClient, url)
	if _, err := h1.ListKinds(context.Background(), &convergev1.ListKindsRequest{}); connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("ListKinds over HTTP/1.1: %v", err)
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("the interceptor saw %d calls, want 2", n)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("URL = %s, want a local one", url)
	}
}
