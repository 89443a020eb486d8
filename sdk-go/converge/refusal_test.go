package converge

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// refusingServer answers every Subscribe with an error of one code.
type refusingServer struct {
	convergev1connect.UnimplementedWorkerServiceHandler
	code    connect.Code
	streams atomic.Int32
}

func (r *refusingServer) Connect(_ context.Context, st *connect.BidiStream[convergev1.WorkerMessage, convergev1.ServerMessage]) error {
	r.streams.Add(1)
	if _, err := st.Receive(); err != nil {
		return err
	}
	return connect.NewError(r.code, errors.New(`kind greeting v1 has no reaction "reconcle"; it declares: reconcile`))
}

func serveRefusing(t *testing.T, code connect.Code) (*refusingServer, string) {
	t.Helper()
	r := &refusingServer{code: code}
	mux := http.NewServeMux()
	mux.Handle(convergev1connect.NewWorkerServiceHandler(r))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	return r, srv.URL
}

// A refused subscription ends Run with the server's reason, at once and
// without retrying; an unavailable server is retried as before.
func TestRunReturnsTheServersRefusalOfTheSubscription(t *testing.T) {
	for _, code := range []connect.Code{connect.CodeFailedPrecondition, connect.CodeInvalidArgument} {
		t.Run(code.String(), func(t *testing.T) {
			srv, url := serveRefusing(t, code)
			w, err := NewWorker(url, WithReconnectBackoff(time.Millisecond, 5*time.Millisecond), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			w.Handle("greeting", 1, "reconcle", nop)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			err = w.Run(ctx)
			if ctx.Err() != nil {
				t.Fatal("Run kept retrying a refused subscription")
			}
			if err == nil || !strings.Contains(err.Error(), `kind greeting v1 has no reaction "reconcle"; it declares: reconcile`) ||
				connect.CodeOf(err) != code {
				t.Fatalf("Run = %v; want the server's refusal (%s)", err, code)
			}
			if n := srv.streams.Load(); n != 1 {
				t.Fatalf("the worker opened %d streams; want 1", n)
			}
		})
	}
	srv, url := serveRefusing(t, connect.CodeUnavailable)
	w, err := NewWorker(url, WithReconnectBackoff(time.Millisecond, 5*time.Millisecond), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("greeting", 1, "reconcile", nop)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	eventually(t, "the worker to retry an unavailable server", func() bool { return srv.streams.Load() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v after retrying an unavailable server; want nil", err)
	}
}
