package endpoint

import (
	"context"
	"net/http"

	"connectrpc.com/connect"
)

// EnvToken names the environment variable a worker reads its bearer token
// from when given none (conctl and stdworker read it too).
const EnvToken = "CONVERGE_TOKEN"

// BearerHeader is the header that presents token, for a server that maps
// tokens to identities (converge serve --token-file).
func BearerHeader(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// HeaderInterceptor sets fixed headers (an Authorization header, say) on
// every unary call and client stream, replacing values already there.
func HeaderInterceptor(h http.Header) connect.Interceptor { return headerInterceptor(h) }

type headerInterceptor http.Header

func (h headerInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		h.apply(req.Header())
		return next(ctx, req)
	}
}

func (h headerInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		h.apply(conn.RequestHeader())
		return conn
	}
}

func (h headerInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func (h headerInterceptor) apply(dst http.Header) {
	for k, vs := range h {
		dst.Del(k)
		for _, v := range vs {
			dst.Add(k, v)
		}
	}
}
