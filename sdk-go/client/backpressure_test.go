package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// busyServer refuses the first n applies with a 20 ms retry hint.
type busyServer struct {
	convergev1connect.UnimplementedControlServiceHandler
	refuse atomic.Int32
	calls  atomic.Int32
}

func (s *busyServer) ApplyResources(context.Context, *convergev1.ApplyResourcesRequest) (*convergev1.ApplyResourcesResponse, error) {
	s.calls.Add(1)
	if s.refuse.Add(-1) >= 0 {
		err := connect.NewError(connect.CodeResourceExhausted, errors.New("kind a is busy"))
		err.Meta().Set(client.RetryAfterHeader, "20")
		return nil, err
	}
	return &convergev1.ApplyResourcesResponse{}, nil
}

func (s *busyServer) GetResource(context.Context, *convergev1.GetResourceRequest) (*convergev1.GetResourceResponse, error) {
	s.calls.Add(1)
	err := connect.NewError(connect.CodeResourceExhausted, errors.New("not an apply"))
	err.Meta().Set(client.RetryAfterHeader, "20")
	return nil, err
}

func startBusy(t *testing.T, refuse int32) (*busyServer, string) {
	s := &busyServer{}
	s.refuse.Store(refuse)
	_, h := convergev1connect.NewControlServiceHandler(s)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func TestAppliesRetryAfterTheHint(t *testing.T) {
	s, url := startBusy(t, 2)
	var waits []time.Duration
	c := client.New(url, client.WithHTTPClient(http.DefaultClient), client.WithBackpressure(time.Minute, func(_ string, d time.Duration, _ error) { waits = append(waits, d) }))
	if _, err := c.ApplyResources(context.Background(), &convergev1.ApplyResourcesRequest{}); err != nil {
		t.Fatalf("apply after two refusals: %v", err)
	}
	if s.calls.Load() != 3 || len(waits) != 2 {
		t.Fatalf("%d calls, %d waits; want 3 and 2", s.calls.Load(), len(waits))
	}
	for _, d := range waits {
		if d < 20*time.Millisecond || d > 25*time.Millisecond {
			t.Errorf("waited %s for a 20 ms hint (jitter at most a fifth)", d)
		}
	}
	// Reads are not retried: only applies are admission-gated.
	if _, err := c.GetResource(context.Background(), &convergev1.GetResourceRequest{}); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("a read was retried or failed otherwise: %v", err)
	}
}

func TestBackpressureRetryCanBeTurnedOff(t *testing.T) {
	s, url := startBusy(t, 1)
	c := client.New(url, client.WithBackpressure(0, nil))
	_, err := c.ApplyResources(context.Background(), &convergev1.ApplyResourcesRequest{})
	if wait, ok := client.RetryAfter(err); !ok || wait != 20*time.Millisecond || s.calls.Load() != 1 {
		t.Fatalf("retry off: %v (hint %s, %d calls), want the refusal at once with its 20 ms hint", err, wait, s.calls.Load())
	}
}

func TestBackpressureGivesUpAfterMaxWait(t *testing.T) {
	_, url := startBusy(t, 1000)
	c := client.New(url, client.WithBackpressure(100*time.Millisecond, nil))
	start := time.Now()
	_, err := c.ApplyResources(context.Background(), &convergev1.ApplyResourcesRequest{})
	if connect.CodeOf(err) != connect.CodeResourceExhausted || time.Since(start) > 5*time.Second {
		t.Fatalf("a server that stays busy: %v after %s, want the refusal within about 100 ms", err, time.Since(start))
	}
}
