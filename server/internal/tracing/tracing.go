// Package tracing is Converge's OpenTelemetry tracing: the exporter set up
// from the standard OTEL_* environment variables (off unless asked for),
// the W3C trace context carried by the API, the task rows and the worker
// protocol, and the helpers the API, store and broker share.
//
// A trace starts at an API call (or joins the caller's traceparent) and
// only sampled traces travel on: a task queued by a sampled change stores
// that change's traceparent, and the broker traces only tasks that carry
// one. Background work with no traced origin (a resync timer, a worker's
// reconnect) is not traced, so a 1% sampler costs 1% of the work.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is Converge's tracer from the current global provider, a no-op
// until Setup installs an exporting one. It is looked up at each use, since
// a tracer taken from an earlier provider keeps following that one.
func Tracer() trace.Tracer {
	return otel.GetTracerProvider().Tracer("github.com/convergehq/converge/server")
}

// propagator is the one wire format Converge reads and writes.
var propagator = propagation.TraceContext{}

// Enabled reports whether the environment asks for traces to be exported:
// OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint with no exporter named.
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "otlp":
		return true, nil
	case "none":
		return false, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: unsupported; Converge exports traces with otlp (or none)", exp)
	}
}

// Setup installs the global tracer provider the environment asks for and
// returns its shutdown, which flushes spans not yet exported. With tracing
// off it installs nothing and the shutdown does nothing. The exporter,
// sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), batching
// (OTEL_BSP_*) and resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)
// read their own standard variables.
func Setup(ctx context.Context, version string, log *slog.Logger) (func(context.Context) error, error) {
	otel.SetTextMapPropagator(propagator)
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return func(context.Context) error { return nil }, err
	}
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(k); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%q: unsupported; Converge exports OTLP over http/protobuf", k, p)
		}
		if os.Getenv(k) != "" {
			break
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("the trace resource: %w", err)
	}
	if os.Getenv("OTEL_SERVICE_NAME") == "" && !strings.Contains(os.Getenv("OTEL_RESOURCE_ATTRIBUTES"), "service.name=") {
		res, _ = resource.Merge(res, resource.NewSchemaless(semconv.ServiceName("converge")))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	log.Info("tracing on: exporting spans over OTLP", "sampler", os.Getenv("OTEL_TRACES_SAMPLER"))
	return tp.Shutdown, nil
}

// TraceParent returns the W3C traceparent of ctx's span when it is being
// recorded (tracing on and the trace sampled), else "": only sampled
// traces are carried on into queued work.
func TraceParent(ctx context.Context) string {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"]
}

// Remote returns ctx with the span context of a stored traceparent as its
// remote parent; ctx unchanged when tp is empty or malformed.
func Remote(ctx context.Context, tp string) context.Context {
	if tp == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": tp})
}

// SpanContextOf parses a stored traceparent (invalid when tp is empty or
// malformed), for span links.
func SpanContextOf(tp string) trace.SpanContext {
	return trace.SpanContextFromContext(Remote(context.Background(), tp))
}

// TraceID is the trace id of ctx's span for log lines ("" when none).
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}
