// Package requestlog gives every API request an id, returned in the
// X-Request-Id response header, and logs each server fault (a 5xx, or an
// RPC error with a server-side code) under that id with its cause, so an
// operator handed the id by a user finds what broke.
package requestlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"
)

// Header carries the request id on every response.
const Header = "X-Request-Id"

type idKey struct{}

// ID is the request id of ctx, "" outside a request.
func ID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Middleware sets the id and logs every response with a 5xx status that
// the interceptor did not already explain.
func Middleware(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newID()
		w.Header().Set(Header, id)
		rec := &recorder{ResponseWriter: w}
		ctx := context.WithValue(r.Context(), idKey{}, id)
		ctx = context.WithValue(ctx, loggedKey{}, &rec.logged)
		next.ServeHTTP(rec, r.WithContext(ctx))
		if rec.status >= 500 && !rec.logged {
			log.Error("server fault", "request_id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status)
		}
	})
}

type loggedKey struct{}

// recorder notes the status written, passing through what streaming
// handlers need (Flush, and Unwrap for http.ResponseController).
type recorder struct {
	http.ResponseWriter
	status int
	logged bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// serverFault reports the RPC codes that mean the server, not the
// caller, is at fault.
func serverFault(c connect.Code) bool {
	switch c {
	case connect.CodeInternal, connect.CodeUnknown, connect.CodeDataLoss, connect.CodeUnavailable:
		return true
	}
	return false
}

// Interceptor logs a handler's server-side errors with their cause under
// the request id, and adds the id to the error the caller sees.
func Interceptor(log *slog.Logger) connect.Interceptor { return interceptor{log: log} }

type interceptor struct{ log *slog.Logger }

func (i interceptor) fault(ctx context.Context, procedure string, err error) error {
	if err == nil || !serverFault(connect.CodeOf(err)) {
		return err
	}
	id := ID(ctx)
	i.log.Error("server fault", "request_id", id, "procedure", procedure, "code", connect.CodeOf(err).String(), "err", err)
	if p, ok := ctx.Value(loggedKey{}).(*bool); ok {
		*p = true
	}
	if id == "" {
		return err
	}
	var ce *connect.Error
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	return connect.NewError(connect.CodeOf(err), fmt.Errorf("%s (request id %s; the server log has the details)", msg, id))
}

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		return res, i.fault(ctx, req.Spec().Procedure, err)
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return i.fault(ctx, conn.Spec().Procedure, next(ctx, conn))
	}
}
