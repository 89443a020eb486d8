package graph

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/tracing"
)

// startSpan starts the span of a batch of internal tasks (a gate, a
// rollup) when any of them was woken by a traced change: a child of the
// first such change, linked to every one, so a dependent's reconcile,
// queued under this span, links back to the upstream change that woke it
// and stays in the composite's trace. Work the batch queues joins the
// returned context's span; untraced batches get ctx and a nil span.
func startSpan(ctx context.Context, name string, ts []store.InternalTask) (context.Context, trace.Span) {
	var parent trace.SpanContext
	var links []trace.Link
	for _, t := range ts {
		sc := tracing.SpanContextOf(t.TraceParent)
		if !sc.IsValid() {
			continue
		}
		if !parent.IsValid() {
			parent = sc
		}
		links = append(links, trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
			attribute.String("converge.kind", t.Kind), attribute.Int64("converge.resource_id", t.ResourceID)}})
	}
	if !parent.IsValid() {
		return ctx, nil
	}
	ctx, span := tracing.Tracer().Start(trace.ContextWithRemoteSpanContext(ctx, parent), name, trace.WithLinks(links...),
		trace.WithAttributes(attribute.Int("converge.tasks", len(ts))))
	return ctx, span
}

func endSpan(span trace.Span) {
	if span != nil {
		span.End()
	}
}
