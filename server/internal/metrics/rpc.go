package metrics

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
)

// Interceptor returns a Connect interceptor that observes each RPC's
// latency by procedure and code. Procedures are a fixed set, so the label
// stays low in cardinality. A nil *Metrics returns a pass-through.
func (m *Metrics) Interceptor() connect.Interceptor { return interceptor{m} }

type interceptor struct{ m *Metrics }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	if i.m == nil {
		return next
	}
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		res, err := next(ctx, req)
		i.m.observe(ctx, req.Spec().Procedure, err, start)
		return res, err
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	if i.m == nil {
		return next
	}
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		err := next(ctx, conn)
		i.m.observe(ctx, conn.Spec().Procedure, err, start)
		return err
	}
}

// observe records an RPC's latency, with its trace id as the exemplar
// when the call was traced and sampled (exposed to scrapers that ask for
// OpenMetrics), so a slow bucket leads to a trace.
func (m *Metrics) observe(ctx context.Context, procedure string, err error, start time.Time) {
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
	}
	key := [2]string{procedure, code}
	o, ok := m.rpcChildren.Load(key)
	if !ok {
		o, _ = m.rpcChildren.LoadOrStore(key, m.rpcSeconds.WithLabelValues(procedure, code))
	}
	took := time.Since(start).Seconds()
	if sc := trace.SpanContextFromContext(ctx); sc.IsSampled() {
		o.(prometheus.ExemplarObserver).ObserveWithExemplar(took, prometheus.Labels{"trace_id": sc.TraceID().String()})
		return
	}
	o.(prometheus.Observer).Observe(took)
}
