package broker

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/tracing"
)

// A traced task (one queued by a sampled change: it carries that change's
// traceparent) gets a span from its claim to its result's acknowledgement,
// a child of the change; the worker's handler span is its child, and so is
// the span applying the result. Work the apply queues (a composer's
// children, a requeue) carries the apply span's traceparent, so a
// composite's whole convergence is one trace.

// startTask starts a claimed task's span, or returns nil when the task is
// not traced.
func startTask(c store.Claimed, reaction string) trace.Span {
	if c.TraceParent == "" {
		return nil
	}
	ctx := tracing.Remote(context.Background(), c.TraceParent)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	_, span := tracing.Tracer().Start(ctx, "task "+c.Kind+" "+c.Trigger, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("converge.kind", c.Kind),
			attribute.Int("converge.kind_version", int(c.Version)),
			attribute.String("converge.trigger", c.Trigger),
			attribute.String("converge.reaction", reaction),
			attribute.String("converge.namespace", c.Namespace),
			attribute.String("converge.name", c.Name),
			attribute.Int64("converge.generation", c.Generation),
			attribute.Int("converge.attempt", int(c.Attempt)),
			attribute.Int64("converge.task_id", c.TaskID),
		))
	if !span.IsRecording() {
		return nil
	}
	return span
}

// spanParent is the traceparent a worker gets for a task's span ("" when
// untraced).
func spanParent(span trace.Span) string {
	if span == nil {
		return ""
	}
	return tracing.TraceParent(trace.ContextWithSpan(context.Background(), span))
}

// dispatched notes on a task's span which worker it went to.
func dispatched(l *lease, s *session) {
	if l.span != nil {
		l.span.AddEvent("dispatched", trace.WithAttributes(attribute.String("converge.worker", s.name),
			attribute.String("converge.session", s.id)))
	}
}

// startApply starts the span applying a traced task's result, under ctx's
// cancellation; the returned context makes what the apply queues join it.
func startApply(ctx context.Context, l *lease) (context.Context, trace.Span) {
	if l.span == nil {
		return ctx, nil
	}
	return tracing.Tracer().Start(trace.ContextWithSpan(ctx, l.span), "apply "+l.key.kind+" "+l.key.trigger)
}

// applyContext is the context a batch of results is applied under: the
// first traced result's apply span, so work the batch queues stays traced
// (a batch's transaction has one traceparent).
func applyContext(ctx context.Context, batch []*result) (context.Context, []trace.Span) {
	var spans []trace.Span
	out := ctx
	for _, r := range batch {
		c, span := startApply(ctx, r.lease)
		if span != nil {
			if len(spans) == 0 {
				out = c
			}
			spans = append(spans, span)
		}
	}
	return out, spans
}

func endSpans(spans []trace.Span) {
	for _, s := range spans {
		if s != nil {
			s.End()
		}
	}
}

// endTask ends a task's span with how its result fared.
func endTask(l *lease, out store.Outcome, applied bool, reason string) {
	if l.span == nil {
		return
	}
	l.span.SetAttributes(attribute.Bool("converge.applied", applied))
	switch {
	case !applied:
		l.span.SetAttributes(attribute.String("converge.discarded", reason))
	case out.Failed:
		l.span.SetAttributes(attribute.Bool("converge.terminal", out.Terminal), attribute.String("converge.reason", out.Reason))
		l.span.SetStatus(codes.Error, out.Message)
	}
	l.span.End()
	l.span = nil
}

// abandonTask ends a task's span whose result will never come through
// this broker (released, reassigned).
func abandonTask(l *lease, why string) {
	if l.span == nil {
		return
	}
	l.span.SetAttributes(attribute.String("converge.discarded", why))
	l.span.End()
	l.span = nil
}

// traceID is a traced task's trace id, for its log lines ("" untraced).
func traceID(l *lease) string {
	if l.span == nil {
		return ""
	}
	return l.span.SpanContext().TraceID().String()
}
