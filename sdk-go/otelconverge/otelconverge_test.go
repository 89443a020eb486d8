package otelconverge_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/otelconverge"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// TestMiddlewareSpan: a traced task's handler runs in a span that is the
// child of the server's task span, visible in the handler's context, and
// marked failed when the handler fails; an untraced task gets no span.
func TestMiddlewareSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	var seen trace.SpanContext
	h := otelconverge.Middleware(otelconverge.WithTracerProvider(tp))(func(ctx context.Context, task *converge.Task) (*converge.Result, error) {
		seen = trace.SpanContextFromContext(ctx)
		if task.Name == "bad" {
			return nil, converge.Terminal(errors.New("no such region"))
		}
		return nil, nil
	})
	if _, err := h(context.Background(), &converge.Task{Kind: "bucket", Reaction: "reconcile", Name: "ok", TraceParent: parent}); err != nil {
		t.Fatal(err)
	}
	if _, err := h(context.Background(), &converge.Task{Kind: "bucket", Reaction: "reconcile", Name: "bad", TraceParent: parent}); err == nil {
		t.Fatal("the failure was lost")
	}
	if _, err := h(context.Background(), &converge.Task{Kind: "bucket", Reaction: "reconcile", Name: "untraced"}); err != nil {
		t.Fatal(err)
	}
	if seen.IsValid() {
		t.Errorf("an untraced task's handler saw span %v", seen)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (the untraced task has none)", len(spans))
	}
	for i, s := range spans {
		if s.Parent().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || s.Parent().SpanID().String() != "00f067aa0ba902b7" || !s.Parent().IsRemote() {
			t.Errorf("span %d parent = %v, want the task's traceparent", i, s.Parent())
		}
		if s.Name() != "handle bucket reconcile" {
			t.Errorf("span %d name = %q", i, s.Name())
		}
	}
	if spans[0].Status().Code == codes.Error || spans[1].Status().Code != codes.Error || spans[1].Status().Description != "no such region" {
		t.Errorf("statuses = %v, %v; want unset, then the failure", spans[0].Status(), spans[1].Status())
	}
}
