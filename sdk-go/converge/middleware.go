package converge

import (
	"context"
	"fmt"
)

// Middleware wraps a handler: it returns a handler that does something
// around calling next (logging, tracing, metrics, a timeout), sees the task
// and next's result and error, and may change them. For example:
//
//	func timing(next converge.HandlerFunc) converge.HandlerFunc {
//		return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
//			start := time.Now()
//			res, err := next(ctx, t)
//			slog.Info("task", "kind", t.Kind, "name", t.Name, "took", time.Since(start), "err", err)
//			return res, err
//		}
//	}
//
// A panic in the handler reaches middleware as the *[PanicError] the worker
// reports (wrapped with [Terminal] once the task has had [PanicRetries]
// retries); a panic in middleware is handled as a handler's.
type Middleware func(next HandlerFunc) HandlerFunc

// MiddlewareOption is what [WithMiddleware] returns: both an [Option] and a
// [HandlerOption].
type MiddlewareOption interface {
	Option
	HandlerOption
}

// WithMiddleware wraps handlers in mw, the first outermost: WithMiddleware(a, b)
// runs a(b(handler)). Passed to [NewWorker] it wraps every task the worker
// runs, including the failures the worker reports itself (a task for a
// reaction it has no handler for, or a [NeedsConfig] task without a
// config); passed to [Worker.Handle] it wraps that reaction's handler,
// inside the worker's middleware. Several WithMiddleware options add up in
// order. A nil Middleware is ignored.
func WithMiddleware(mw ...Middleware) MiddlewareOption {
	return middlewareOption(mw)
}

type middlewareOption []Middleware

func (m middlewareOption) apply(c *config) { c.middleware = append(c.middleware, m...) }

func (m middlewareOption) applyHandler(r *registration) {
	r.middleware = append(r.middleware, m...)
}

// wrap puts h inside the handler's and then the worker's middleware. The
// handler is guarded first, so middleware sees its panic as an error.
func (w *Worker) wrap(h HandlerFunc, handlerMW []Middleware) HandlerFunc {
	h = w.guard(h)
	h = chain(h, handlerMW)
	return chain(h, w.cfg.middleware)
}

// chain applies mw to h, the last innermost. A middleware that returns a
// nil handler makes every task fail terminally, saying so.
func chain(h HandlerFunc, mw []Middleware) HandlerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		if mw[i] == nil {
			continue
		}
		if h = mw[i](h); h == nil {
			return func(context.Context, *Task) (*Result, error) {
				return nil, Terminal(fmt.Errorf("converge: middleware %d of %d returned a nil handler", i+1, len(mw)))
			}
		}
	}
	return h
}
