package tracing

import (
	"context"
	"errors"
	"strings"

	"connectrpc.com/connect"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Interceptor starts a server span for each unary API call, joining the
// caller's traceparent header when it sends one. Streams (watches) are
// long-lived and carry no span: a trace is about one change.
func Interceptor() connect.Interceptor { return interceptor{} }

type interceptor struct{}

func (interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if !req.Spec().IsClient {
			ctx = propagator.Extract(ctx, propagation.HeaderCarrier(req.Header()))
		}
		proc := req.Spec().Procedure
		service, method, _ := strings.Cut(strings.TrimPrefix(proc, "/"), "/")
		ctx, span := Tracer().Start(ctx, strings.TrimPrefix(proc, "/"), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("rpc.system", "connect_rpc"),
				attribute.String("rpc.service", service), attribute.String("rpc.method", method)))
		defer span.End()
		res, err := next(ctx, req)
		if err != nil {
			code := connect.CodeUnknown
			var ce *connect.Error
			if errors.As(err, &ce) {
				code = ce.Code()
			}
			span.SetAttributes(attribute.String("rpc.connect_rpc.error_code", code.String()))
			span.SetStatus(codes.Error, err.Error())
		}
		return res, err
	}
}

func (interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
