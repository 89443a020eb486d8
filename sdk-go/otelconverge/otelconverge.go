// Package otelconverge traces a Converge worker's handlers with
// OpenTelemetry. It is a module of its own so that the SDK proper does not
// depend on OpenTelemetry.
//
// The server sends each task of a traced change with the traceparent of
// its span for the task; [Middleware] starts the handler's span as that
// span's child, with the tracer provider the program set up
// (otel.SetTracerProvider) unless given one, and hands the handler a context carrying it, so
// the handler's own instrumented calls (HTTP clients, SDKs of clouds) join
// the trace:
//
//	w := converge.NewWorker(server, converge.WithMiddleware(otelconverge.Middleware()))
//
// A task without a traceparent (tracing off on the server, or the change
// not sampled) runs without a span, so the worker starts no traces of its
// own.
package otelconverge

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/convergehq/converge/sdk-go/converge"
)

// Option configures [Middleware].
type Option func(*options)

type options struct {
	provider trace.TracerProvider
}

// WithTracerProvider takes spans from p instead of the global provider.
func WithTracerProvider(p trace.TracerProvider) Option {
	return func(o *options) { o.provider = p }
}

// Middleware returns the middleware that starts each traced task's handler
// span. A failure sets the span's status to error, naming whether it was
// terminal.
func Middleware(opts ...Option) converge.Middleware {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return func(next converge.HandlerFunc) converge.HandlerFunc {
		return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
			if t.TraceParent == "" {
				return next(ctx, t)
			}
			parent := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": t.TraceParent})
			if !trace.SpanContextFromContext(parent).IsValid() {
				return next(ctx, t)
			}
			provider := o.provider
			if provider == nil {
				provider = otel.GetTracerProvider()
			}
			ctx, span := provider.Tracer("github.com/convergehq/converge/sdk-go/otelconverge").Start(parent,
				"handle "+t.Kind+" "+t.Reaction, trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("converge.kind", t.Kind),
					attribute.Int("converge.kind_version", t.KindVersion),
					attribute.String("converge.reaction", t.Reaction),
					attribute.String("converge.trigger", t.Trigger),
					attribute.String("converge.namespace", t.Namespace),
					attribute.String("converge.name", t.Name),
					attribute.Int64("converge.generation", t.Generation),
					attribute.Int("converge.attempt", t.Attempt),
				))
			defer span.End()
			res, err := next(ctx, t)
			if err != nil {
				span.SetAttributes(attribute.Bool("converge.terminal", converge.IsTerminal(err)))
				span.SetStatus(codes.Error, err.Error())
			}
			return res, err
		}
	}
}
