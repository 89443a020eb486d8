package client

import (
	"context"
	"errors"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// ErrStop is returned by a Follow callback to end Follow without an error.
var ErrStop = errors.New("client: stop following")

// Reconnect backoff bounds for Follow.
const (
	minReconnectDelay = 100 * time.Millisecond
	maxReconnectDelay = 5 * time.Second
)

// Follow opens a Watch with req and calls fn with each response, in order.
//
// If the stream breaks after the server registered it, Follow reopens it from
// the last cursor it saw, so no change is lost or repeated. fn receives a
// heartbeat response exactly once per opened stream, right after the server
// registered it: every later change reaches fn, so state read before that
// heartbeat may be stale and is best read again then. Later heartbeats only
// advance the cursor and are not passed to fn.
//
// Follow returns nil when fn returns ErrStop, fn's error when it returns any
// other, ctx.Err() when ctx ends, and the stream's error when the first stream
// cannot be established or the server refuses the request (for example an
// invalid or expired cursor).
func (c *Client) Follow(ctx context.Context, req *convergev1.WatchRequest, fn func(*convergev1.WatchResponse) error) error {
	if req == nil {
		req = &convergev1.WatchRequest{}
	}
	req = proto.CloneOf(req)
	established := false
	delay := minReconnectDelay
	for {
		registered, err := c.followOnce(ctx, req, fn)
		var cbErr callbackError
		switch {
		case errors.Is(err, ErrStop):
			return nil
		case errors.As(err, &cbErr):
			return cbErr.err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		if registered {
			established = true
			delay = minReconnectDelay
		}
		if !established || !retryable(err) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}

// callbackError marks an error that came from the Follow callback.
type callbackError struct{ err error }

func (e callbackError) Error() string { return e.err.Error() }

// followOnce runs one Watch stream until it ends, advancing req.Cursor as
// responses arrive. registered reports whether the server's first heartbeat
// arrived. A stream that ends without an error is reported as Unavailable so
// the caller reconnects.
func (c *Client) followOnce(ctx context.Context, req *convergev1.WatchRequest, fn func(*convergev1.WatchResponse) error) (registered bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	stream, err := c.Watch(ctx, req)
	if err != nil {
		cancel()
		return false, err
	}
	defer func() {
		cancel()
		_ = stream.Close()
	}()
	for stream.Receive() {
		resp := stream.Msg()
		if !registered {
			registered = true
			// The contract makes the first message a heartbeat; should a server
			// send a change first, fn still hears that the stream is live.
			first := resp
			if !resp.GetHeartbeat() || len(resp.GetChanges()) > 0 {
				first = &convergev1.WatchResponse{Heartbeat: true, Cursor: req.GetCursor()}
			}
			advance(req, first)
			if err := call(fn, first); err != nil {
				return true, err
			}
			if first == resp {
				continue
			}
		}
		advance(req, resp)
		if len(resp.GetChanges()) == 0 {
			continue
		}
		if err := call(fn, resp); err != nil {
			return true, err
		}
	}
	if err := stream.Err(); err != nil {
		return registered, err
	}
	return registered, connect.NewError(connect.CodeUnavailable, errors.New("watch stream ended"))
}

func call(fn func(*convergev1.WatchResponse) error, resp *convergev1.WatchResponse) error {
	if err := fn(resp); err != nil {
		if errors.Is(err, ErrStop) {
			return ErrStop
		}
		return callbackError{err}
	}
	return nil
}

// advance moves the resume point past resp.
func advance(req *convergev1.WatchRequest, resp *convergev1.WatchResponse) {
	if c := resp.GetCursor(); c != "" {
		req.Cursor = c
		return
	}
	if ch := resp.GetChanges(); len(ch) > 0 && ch[len(ch)-1].GetCursor() != "" {
		req.Cursor = ch[len(ch)-1].GetCursor()
	}
}

// retryable reports whether reopening a broken stream may help. Codes that
// describe the request itself (or the caller's rights) will not change on a
// retry.
func retryable(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeInvalidArgument, connect.CodeNotFound, connect.CodeAlreadyExists,
		connect.CodePermissionDenied, connect.CodeFailedPrecondition, connect.CodeOutOfRange,
		connect.CodeUnimplemented, connect.CodeUnauthenticated:
		return false
	}
	return true
}
