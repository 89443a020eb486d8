package client

import (
	"context"
	"sync"

	"connectrpc.com/connect"
)

// ReadAfterHeader carries read-your-writes tokens. A server with a read
// replica answers every successful write with a token in this response
// header; a read that sends the greatest token its client has seen is
// served only by a database that has replayed that write (the replica once
// it has caught up, bounded, else the primary). Tokens are opaque, of one
// fixed width, and order as strings in the order of the writes they stand
// for.
const ReadAfterHeader = "Converge-Read-After"

// readAfter remembers the greatest token a Client has been answered with
// and sends it with every later request, streams included, so that a
// program reads its own writes without doing anything.
type readAfter struct {
	mu    sync.Mutex
	token string
}

func (r *readAfter) get() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.token
}

// observe keeps tok if it is later than the one held. Tokens of another
// width are not ones this client knows how to order, and are ignored.
func (r *readAfter) observe(tok string) {
	if tok == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.token == "" || (len(tok) == len(r.token) && tok > r.token) {
		r.token = tok
	}
}

func (r *readAfter) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if tok := r.get(); tok != "" && req.Header().Get(ReadAfterHeader) == "" {
			req.Header().Set(ReadAfterHeader, tok)
		}
		resp, err := next(ctx, req)
		if err == nil && resp != nil {
			r.observe(resp.Header().Get(ReadAfterHeader))
		}
		return resp, err
	}
}

func (r *readAfter) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		if tok := r.get(); tok != "" && conn.RequestHeader().Get(ReadAfterHeader) == "" {
			conn.RequestHeader().Set(ReadAfterHeader, tok)
		}
		return &observedStream{StreamingClientConn: conn, ra: r}
	}
}

// observedStream keeps the token a stream's response headers carry (a
// Watch the primary served answers with one), once they have arrived.
type observedStream struct {
	connect.StreamingClientConn
	ra   *readAfter
	seen bool
}

func (s *observedStream) Receive(msg any) error {
	err := s.StreamingClientConn.Receive(msg)
	if !s.seen && err == nil {
		s.seen = true
		s.ra.observe(s.ResponseHeader().Get(ReadAfterHeader))
	}
	return err
}

func (r *readAfter) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
