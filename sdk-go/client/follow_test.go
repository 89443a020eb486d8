package client_test

import (
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestFollowResumesWithoutLossOrRepeat breaks the stream between two changes
// and checks that fn sees each change exactly once, with one heartbeat per
// opened stream.
func TestFollowResumesWithoutLossOrRepeat(t *testing.T) {
	f, url := newFake(t)
	c := client.New(url)

	got := make(chan *convergev1.WatchResponse, 16)
	errc := make(chan error, 1)
	go func() {
		errc <- c.Follow(testContext(t), &convergev1.WatchRequest{Namespace: "default"}, func(r *convergev1.WatchResponse) error {
			got <- r
			return nil
		})
	}()
	next := func() *convergev1.WatchResponse {
		t.Helper()
		select {
		case r := <-got:
			return r
		case err := <-errc:
			t.Fatalf("Follow returned early: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no response within 10s")
		}
		return nil
	}

	f.waitRegistered(t)
	if r := next(); !r.GetHeartbeat() {
		t.Fatalf("first response = %v, want a heartbeat", r)
	}
	f.put(resource("a", client.PhaseReconciling))
	if r := next(); r.GetChanges()[0].GetName() != "a" {
		t.Fatalf("got %v, want the change of a", r)
	}

	f.holdWatches()
	f.breakStreams()
	f.put(resource("b", client.PhaseReconciling)) // while no stream is open
	f.releaseWatches()
	req := f.waitRegistered(t)
	if req.GetCursor() != "1" {
		t.Fatalf("reopened with cursor %q, want %q (after the change of a)", req.GetCursor(), "1")
	}
	if r := next(); !r.GetHeartbeat() {
		t.Fatalf("first response after reconnect = %v, want a heartbeat", r)
	}
	if r := next(); r.GetChanges()[0].GetName() != "b" {
		t.Fatalf("got %v, want the change of b made while disconnected", r)
	}
	select {
	case r := <-got:
		t.Fatalf("unexpected extra response %v", r)
	default:
	}
}

func TestFollowReturnsFirstOpenError(t *testing.T) {
	f, url := newFake(t)
	f.watchErr = connect.NewError(connect.CodeUnavailable, errors.New("broker draining"))
	c := client.New(url)
	err := c.Follow(testContext(t), &convergev1.WatchRequest{}, func(*convergev1.WatchResponse) error { return nil })
	if connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("err = %v, want the unavailable error of the first open", err)
	}
}

func TestFollowStopsOnCallback(t *testing.T) {
	_, url := newFake(t)
	c := client.New(url)

	stop := func(*convergev1.WatchResponse) error { return client.ErrStop }
	if err := c.Follow(testContext(t), nil, stop); err != nil {
		t.Fatalf("Follow with ErrStop = %v, want nil", err)
	}

	boom := errors.New("boom")
	fail := func(*convergev1.WatchResponse) error { return boom }
	if err := c.Follow(testContext(t), nil, fail); !errors.Is(err, boom) {
		t.Fatalf("Follow = %v, want the callback's error", err)
	}
}

func TestFollowRefusedCursorIsNotRetried(t *testing.T) {
	_, url := newFake(t)
	c := client.New(url)
	err := c.Follow(testContext(t), &convergev1.WatchRequest{Cursor: "999"}, func(*convergev1.WatchResponse) error { return nil })
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("err = %v, want invalid_argument", err)
	}
}
