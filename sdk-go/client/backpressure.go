package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// RetryAfterHeader is the response header of an admission refusal that
// says, in milliseconds, when to retry. The server refuses an apply with
// ResourceExhausted while a kind has more reconciles waiting than its
// admission bound (converge serve --max-backlog).
const RetryAfterHeader = "Converge-Retry-After-Ms"

// DefaultBackpressureWait is how long a Client keeps retrying one apply
// the server refused for back-pressure before returning the refusal.
const DefaultBackpressureWait = 5 * time.Minute

// RetryAfter reports the retry hint of an admission refusal; ok is false
// for every other error.
func RetryAfter(err error) (wait time.Duration, ok bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeResourceExhausted {
		return 0, false
	}
	ms, perr := strconv.ParseInt(ce.Meta().Get(RetryAfterHeader), 10, 64)
	if perr != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// WithBackpressure sets how a Client handles admission refusals of
// ApplyResource and ApplyResources: it retries after the server's hint
// (with a little jitter) for up to maxWait in all, calling notify, when
// set, before each wait. Applies are declarative, so a retry is safe.
// maxWait 0 turns retrying off: the refusal is returned at once. The
// default retries for DefaultBackpressureWait without notifying.
func WithBackpressure(maxWait time.Duration, notify func(procedure string, wait time.Duration, refusal error)) Option {
	return optionFunc(func(cfg *config) { cfg.backpressure = backpressure{maxWait: maxWait, notify: notify} })
}

type backpressure struct {
	maxWait time.Duration
	notify  func(string, time.Duration, error)
}

// admitted are the procedures the server's admission may refuse.
var admitted = map[string]bool{
	convergev1connect.ControlServiceApplyResourceProcedure:  true,
	convergev1connect.ControlServiceApplyResourcesProcedure: true,
}

func (b backpressure) interceptor() connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			if !admitted[req.Spec().Procedure] {
				return next(ctx, req)
			}
			deadline := time.Now().Add(b.maxWait)
			for {
				res, err := next(ctx, req)
				wait, refused := RetryAfter(err)
				if !refused {
					return res, err
				}
				wait += time.Duration(rand.Int64N(int64(wait)/5 + 1))
				if time.Now().Add(wait).After(deadline) {
					return res, err
				}
				if b.notify != nil {
					b.notify(req.Spec().Procedure, wait, err)
				}
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return res, err
				case <-t.C:
				}
			}
		}
	}
}
