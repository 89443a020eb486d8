package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func resource(name, phase string) *convergev1.Resource {
	return &convergev1.Resource{Namespace: "default", Kind: "greeting", KindVersion: 1, Name: name, Phase: phase}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestWaitForAlreadyDone(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReady))
	c := client.New(url)

	got, err := c.WaitFor(testContext(t), "", "greeting", "hello", client.IsReady)
	if err != nil {
		t.Fatalf("WaitFor: %v", err)
	}
	if got.GetName() != "hello" || got.GetPhase() != client.PhaseReady {
		t.Fatalf("got %v, want hello Ready", got)
	}
	req := f.waitRegistered(t)
	if req.Namespace != "default" || req.Kind != "greeting" || req.Name != "hello" {
		t.Fatalf("watch request %v is not filtered to default/greeting/hello", req)
	}
}

func TestWaitForFollowsChanges(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReconciling))
	c := client.New(url)

	type result struct {
		res *convergev1.Resource
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.WaitFor(testContext(t), "default", "greeting", "hello", client.Settled)
		done <- result{res, err}
	}()
	f.waitRegistered(t)
	f.put(resource("other", client.PhaseFailed)) // not the resource being waited for
	f.put(resource("hello", client.PhaseDegraded))
	f.put(resource("hello", client.PhaseFailed))

	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("WaitFor: %v", r.err)
		}
		if r.res.GetPhase() != client.PhaseFailed {
			t.Fatalf("phase = %q, want Failed", r.res.GetPhase())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor did not return after the resource settled")
	}
}

func TestWaitForNotFound(t *testing.T) {
	_, url := newFake(t)
	c := client.New(url)
	_, err := c.WaitFor(testContext(t), "team-a", "greeting", "missing", client.IsReady)
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("code = %v (err %v), want not_found", connect.CodeOf(err), err)
	}
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Message() != "resource team-a/greeting/missing not found" {
		t.Fatalf("message = %q, want %q", ce.Message(), "resource team-a/greeting/missing not found")
	}
}

func TestWaitForDeletedWhileWaiting(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseDeleting))
	c := client.New(url)

	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitFor(testContext(t), "", "greeting", "hello", client.IsReady)
		errc <- err
	}()
	f.waitRegistered(t)
	f.remove("default", "greeting", "hello")
	select {
	case err := <-errc:
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatalf("err = %v, want not_found", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor did not notice the deletion")
	}
}

func TestWaitForEndedReturnsLastSeen(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReconciling))
	c := client.New(url)

	// The context ends once the first read has been judged, so the last
	// version seen is known, however slow the machine.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, err := c.WaitFor(ctx, "", "greeting", "hello", func(*convergev1.Resource) bool {
		cancel()
		return false
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
	if got.GetPhase() != client.PhaseReconciling {
		t.Fatalf("last seen = %v, want the Reconciling resource", got)
	}
}

func TestWaitForRejectsMissingName(t *testing.T) {
	c := client.New("http://127.0.0.1:1")
	_, err := c.WaitFor(context.Background(), "", "greeting", "", client.IsReady)
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("err = %v, want invalid_argument", err)
	}
}

func TestWaitForSurvivesBrokenStream(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReconciling))
	c := client.New(url)

	errc := make(chan error, 1)
	go func() {
		_, err := c.WaitFor(testContext(t), "", "greeting", "hello", client.IsReady)
		errc <- err
	}()
	f.waitRegistered(t)
	f.waitGet(t) // the first read saw Reconciling
	f.holdWatches()
	f.breakStreams()
	f.put(resource("hello", client.PhaseReady)) // happens while no stream is open
	f.releaseWatches()
	req := f.waitRegistered(t)
	if req.Cursor == "" {
		t.Fatal("the reopened Watch carries no cursor")
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("WaitFor: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitFor did not see the change made while the stream was down")
	}
}

func TestWithHeaderReachesUnaryAndStream(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReady))
	c := client.New(url, client.WithHeader("Authorization", "Bearer t0ken"))

	if _, err := c.WaitFor(testContext(t), "", "greeting", "hello", client.IsReady); err != nil {
		t.Fatalf("WaitFor: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.headers) == 0 || f.headers[0].Get("Authorization") != "Bearer t0ken" {
		t.Fatalf("Watch headers = %v, want Authorization", f.headers)
	}
}

func TestWithBearerToken(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReady))
	c := client.New(url, client.WithBearerToken("tok-1"), client.WithBearerToken("tok-2"), client.WithBearerToken(""))
	if _, err := c.WaitFor(testContext(t), "", "greeting", "hello", client.IsReady); err != nil {
		t.Fatalf("WaitFor: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.headers) == 0 || strings.Join(f.headers[0].Values("Authorization"), "|") != "Bearer tok-2" {
		t.Fatalf("headers = %v, want one Authorization: Bearer tok-2 (the last token wins)", f.headers)
	}
}

func TestSettledAndIsReady(t *testing.T) {
	for _, tc := range []struct {
		phase          string
		ready, settled bool
	}{
		{client.PhaseReady, true, true},
		{client.PhaseFailed, false, true},
		{client.PhaseReconciling, false, false},
		{client.PhaseDegraded, false, false},
		{client.PhaseDeleting, false, false},
		{"", false, false},
	} {
		r := &convergev1.Resource{Phase: tc.phase}
		if got := client.IsReady(r); got != tc.ready {
			t.Errorf("IsReady(%q) = %v, want %v", tc.phase, got, tc.ready)
		}
		if got := client.Settled(r); got != tc.settled {
			t.Errorf("Settled(%q) = %v, want %v", tc.phase, got, tc.settled)
		}
	}
	if client.IsReady(nil) || client.Settled(nil) {
		t.Error("a nil resource must be neither ready nor settled")
	}
}

// TestNilOptionsKeepTheDefaults: a nil option and a nil HTTP client are
// ignored rather than breaking the first call.
func TestNilOptionsKeepTheDefaults(t *testing.T) {
	f, url := newFake(t)
	f.put(resource("hello", client.PhaseReady))
	c := client.New(url, nil, client.WithHTTPClient(nil))
	if _, err := c.WaitFor(testContext(t), "", "greeting", "hello", client.IsReady, nil); err != nil {
		t.Fatalf("WaitFor: %v", err)
	}
}
