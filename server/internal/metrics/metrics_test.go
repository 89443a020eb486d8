package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestClaimsAndCompletionsByKindAndOutcome(t *testing.T) {
	m := New()
	m.Claimed("greeting", 3)
	m.Claimed("greeting", 2)
	m.Claimed("bucket", 1)
	m.Claimed("bucket", 0)
	m.Completed("greeting", Success, "")
	m.Completed("greeting", Success, "")
	m.Completed("greeting", Terminal, "")
	m.Completed("bucket", Superseded, "")
	m.Completed("bucket", Outcome(99), "")

	if got := testutil.ToFloat64(m.claims.WithLabelValues("greeting")); got != 5 {
		t.Errorf("greeting claims = %v, want 5", got)
	}
	if got := testutil.ToFloat64(m.claims.WithLabelValues("bucket")); got != 1 {
		t.Errorf("bucket claims = %v, want 1", got)
	}
	for _, c := range []struct {
		kind    string
		outcome Outcome
		want    float64
	}{
		{"greeting", Success, 2}, {"greeting", Terminal, 1}, {"greeting", Transient, 0},
		{"bucket", Superseded, 1}, {"bucket", Stale, 0},
	} {
		if got := testutil.ToFloat64(m.completions.WithLabelValues(c.kind, c.outcome.String(), "")); got != c.want {
			t.Errorf("%s %s completions = %v, want %v", c.kind, c.outcome, got, c.want)
		}
	}
	// Every outcome child exists from a kind's first sighting, so a rate
	// over a not-yet-seen outcome reads 0 rather than missing.
	if n := testutil.CollectAndCount(m.completions); n != 2*int(numOutcomes) {
		t.Errorf("completion series = %d, want %d", n, 2*int(numOutcomes))
	}
	if Outcome(-1).String() != "unknown" {
		t.Errorf("Outcome(-1) = %q", Outcome(-1).String())
	}
}

func TestCompletionsByReasonAreBoundedPerKind(t *testing.T) {
	m := New()
	m.Completed("greeting", Transient, "QuotaExceeded")
	m.Completed("greeting", Transient, "QuotaExceeded")
	m.Completed("greeting", Terminal, "QuotaExceeded")
	if got := testutil.ToFloat64(m.completions.WithLabelValues("greeting", "transient", "QuotaExceeded")); got != 2 {
		t.Errorf("transient QuotaExceeded = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.completions.WithLabelValues("greeting", "terminal", "QuotaExceeded")); got != 1 {
		t.Errorf("terminal QuotaExceeded = %v, want 1", got)
	}
	// A worker inventing codes cannot grow the series without bound: codes
	// past the cap share one label value. QuotaExceeded is already one.
	for i := range MaxReasonsPerKind + 10 {
		m.Completed("greeting", Transient, fmt.Sprintf("Code%d", i))
	}
	if got := testutil.ToFloat64(m.completions.WithLabelValues("greeting", "transient", OtherReasons)); got != 11 {
		t.Errorf("%s = %v, want 11 (the codes past the first %d)", OtherReasons, got, MaxReasonsPerKind)
	}
	// A known code keeps its own series after the cap is reached.
	m.Completed("greeting", Transient, "Code0")
	if got := testutil.ToFloat64(m.completions.WithLabelValues("greeting", "transient", "Code0")); got != 2 {
		t.Errorf("Code0 = %v, want 2", got)
	}
	// Another kind has a cap of its own.
	m.Completed("bucket", Transient, "Code99")
	if got := testutil.ToFloat64(m.completions.WithLabelValues("bucket", "transient", "Code99")); got != 1 {
		t.Errorf("bucket Code99 = %v, want 1", got)
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	var m *Metrics
	m.Claimed("greeting", 1)
	m.Completed("greeting", Success, "")
	called := false
	next := connect.UnaryFunc(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		called = true
		return nil, nil
	})
	if _, err := m.Interceptor().WrapUnary(next)(context.Background(), nil); err != nil || !called {
		t.Fatalf("nil interceptor: called %v, err %v", called, err)
	}
}

func TestQueueDepthIsCachedAndKeepsEmptiedSeries(t *testing.T) {
	m := New()
	reads := 0
	depths := []QueueDepth{{Kind: "greeting", Trigger: "specChange", Tasks: 7}, {Kind: "greeting", Trigger: "resync", Tasks: 2}}
	var readErr error
	read := func(context.Context) ([]QueueDepth, error) {
		reads++
		return depths, readErr
	}
	now := time.Unix(1000, 0)
	c := &queueCollector{read: read, ttl: 5 * time.Second, log: quiet(), seen: map[[2]string]bool{}, now: func() time.Time { return now }}
	if err := m.register(c); err != nil {
		t.Fatal(err)
	}
	scrape := func() string {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
		return rec.Body.String()
	}
	body := scrape()
	want := `converge_queue_tasks{kind="greeting",trigger="specChange"} 7`
	if !strings.Contains(body, want) || !strings.Contains(body, `converge_queue_tasks{kind="greeting",trigger="resync"} 2`) {
		t.Fatalf("first scrape lacks the queue depth:\n%s", grep(body, "converge_queue"))
	}
	// Within the TTL the database is not asked again.
	depths = []QueueDepth{{Kind: "greeting", Trigger: "specChange", Tasks: 1}}
	now = now.Add(4 * time.Second)
	scrape()
	scrape()
	if reads != 1 {
		t.Fatalf("reads within the TTL = %d, want 1", reads)
	}
	// After it, a fresh reading; the drained trigger reads 0.
	now = now.Add(2 * time.Second)
	body = scrape()
	if reads != 2 || !strings.Contains(body, `converge_queue_tasks{kind="greeting",trigger="specChange"} 1`) ||
		!strings.Contains(body, `converge_queue_tasks{kind="greeting",trigger="resync"} 0`) {
		t.Fatalf("reads = %d; scrape:\n%s", reads, grep(body, "converge_queue"))
	}
	// A failed reading keeps the last good one and counts the error.
	readErr = errors.New("database down")
	now = now.Add(6 * time.Second)
	body = scrape()
	if !strings.Contains(body, `converge_queue_tasks{kind="greeting",trigger="specChange"} 1`) ||
		!strings.Contains(body, "converge_queue_read_errors_total 1") {
		t.Fatalf("after a failed reading:\n%s", grep(body, "converge_queue"))
	}
}

func TestBrokerInFlightKeepsDrainedKinds(t *testing.T) {
	m := New()
	stats := BrokerStats{Workers: 2, InFlight: map[string]int{"greeting": 3}}
	if err := m.WatchBroker(func() BrokerStats { return stats }); err != nil {
		t.Fatal(err)
	}
	if err := m.WatchNotify(func() int64 { return 4 }, func() int64 { return 5 }); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	body := rec.Body.String()
	for _, want := range []string{"converge_workers_connected 2", `converge_tasks_in_flight{kind="greeting"} 3`,
		"converge_notify_sent_total 4", "converge_notify_received_total 5", "go_goroutines ", "process_"} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	stats = BrokerStats{}
	rec = httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	if body := rec.Body.String(); !strings.Contains(body, `converge_tasks_in_flight{kind="greeting"} 0`) ||
		!strings.Contains(body, "converge_workers_connected 0") {
		t.Errorf("drained scrape:\n%s", grep(body, "converge_"))
	}
}

func TestInterceptorObservesProcedureAndCode(t *testing.T) {
	m := New()
	spec := connect.Spec{Procedure: "/converge.v1.ControlService/GetResource"}
	ok := m.Interceptor().WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		return nil, nil
	})
	notFound := m.Interceptor().WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("resource x: not found"))
	})
	req := &fakeRequest{spec: spec}
	_, _ = ok(context.Background(), req)
	_, _ = ok(context.Background(), req)
	_, _ = notFound(context.Background(), req)
	if n := testutil.CollectAndCount(m.rpcSeconds); n != 2 {
		t.Fatalf("histogram series = %d, want 2", n)
	}
	body := grep(scrapeText(m), "converge_api_request_duration_seconds_count")
	for _, want := range []string{
		`converge_api_request_duration_seconds_count{code="ok",procedure="/converge.v1.ControlService/GetResource"} 2`,
		`converge_api_request_duration_seconds_count{code="not_found",procedure="/converge.v1.ControlService/GetResource"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %q:\n%s", want, body)
		}
	}
}

// fakeRequest is just enough of a connect.AnyRequest for the interceptor.
type fakeRequest struct {
	connect.AnyRequest
	spec connect.Spec
}

func (r *fakeRequest) Spec() connect.Spec { return r.spec }

func scrapeText(m *Metrics) string {
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, Path, nil))
	return rec.Body.String()
}

func grep(body, prefix string) string {
	var out []string
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

func BenchmarkCompleted(b *testing.B) {
	m := New()
	m.Completed("greeting", Success, "")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Completed("greeting", Success, "")
		}
	})
}

// TestTracedCallsLeaveExemplars: a sampled call's latency carries its trace
// id as an exemplar, which an OpenMetrics scrape shows.
func TestTracedCallsLeaveExemplars(t *testing.T) {
	m := New()
	h := m.Interceptor().WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { return nil, nil })
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	_, _ = h(ctx, &fakeRequest{spec: connect.Spec{Procedure: "/converge.v1.ControlService/ApplyResource"}})
	req := httptest.NewRequest(http.MethodGet, Path, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	if body := grep(rec.Body.String(), "converge_api_request_duration_seconds_bucket"); !strings.Contains(body, `# {trace_id="4bf92f3577b34da6a3ce929d0e0e4736"}`) {
		t.Fatalf("no exemplar with the trace id:\n%s", body)
	}
	if strings.Contains(scrapeText(m), "trace_id") {
		t.Fatal("the plain text format shows exemplars")
	}
}
