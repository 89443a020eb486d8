package app_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/tracing"
)

const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"

// traceTo turns tracing on for the test, exporting to an in-process OTLP
// receiver; stop flushes the spans.
func traceTo(t *testing.T) (recv *otlpReceiver, stop func(context.Context) error) {
	recv = &otlpReceiver{}
	collector := httptest.NewServer(recv)
	t.Cleanup(collector.Close)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	stop, err := tracing.Setup(context.Background(), "test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stop(context.Background())
		otel.SetTracerProvider(noop.NewTracerProvider())
	})
	return recv, stop
}

// tracedCaller is a control client whose calls are children of the span
// callerSpan of trace traceID, as an instrumented caller's are.
func tracedCaller(base string) convergev1connect.ControlServiceClient {
	return convergev1connect.NewControlServiceClient(&http.Client{
		Transport: withHeader{"traceparent", "00-" + traceID + "-" + callerSpan + "-01"}}, base)
}

// TestFailedTaskLogsTraceID: the server's log line of a traced task's
// failure carries the trace id.
func TestFailedTaskLogsTraceID(t *testing.T) {
	traceTo(t)
	var logs testkit.Buffer
	base, _, ctl := serverWith(t, func(c *app.Config) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	wrk := convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
	applyGreeting(t, ctl)
	applyResource(t, tracedCaller(base), "hello", map[string]any{"name": "world"})
	w, _ := connectWorker(t, wrk, 1)
	task := w.Task()
	w.Result(task.GetLease(), `{"message":42}`)
	w.Ack()
	testkit.Eventually(t, "the failure logged", func() bool { return strings.Contains(logs.String(), `msg="task failed"`) })
	if !strings.Contains(logs.String(), "trace_id="+traceID) {
		t.Fatalf("the failure's log line lacks trace_id=%s:\n%s", traceID, logs.String())
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes the protobuf
// export requests the exporter posts to /v1/traces and keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var ex coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &ex)
	}
	if req.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, fmt.Sprintf("%s: %v", req.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range ex.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *otlpReceiver) trace(id string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if hex.EncodeToString(s.GetTraceId()) == id {
			out = append(out, s)
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			if v := a.GetValue(); v.GetStringValue() != "" {
				return v.GetStringValue()
			}
			return fmt.Sprint(a.GetValue().GetIntValue())
		}
	}
	return ""
}

// TestTraceOfAComposite: an API call joining the caller's traceparent
// starts a trace that follows a 1 → 3 → 3 composite converging: each task's
// span is the child of the change that queued it (the API call for the
// root, the parent's result apply for each child), each result apply is
// the child of its task's span, the worker is sent its task span's
// traceparent, a dependent's reconcile is queued by a gate span linked to
// its dependency's apply, and an OTLP receiver gets it all as one trace.
func TestTraceOfAComposite(t *testing.T) {
	recv, stop := traceTo(t)
	base, ctl, wrk := server(t)
	applyStackKinds(t, ctl, 0)
	caller := tracedCaller(base)
	if _, err := caller.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "stack", KindVersion: 1, Name: "root",
		Spec: mustStruct(t, map[string]any{"level": "root"})}); err != nil {
		t.Fatal(err)
	}
	w := stackWorker(t, wrk)
	sent := map[string]string{} // resource name → the traceparent its task carried
	for len(sent) < 13 {
		tk := w.Task()
		name := tk.GetResource().GetName()
		sent[name] = tk.GetTraceparent()
		switch {
		case tk.GetKind() == "part":
			if name == "mid-0-0" {
				// The dependent's gate has run once (woken by its creation)
				// and holds it: so the wake that opens it is this apply's.
				testkit.Eventually(t, "mid-0-1 waiting for mid-0-0", func() bool {
					return strings.Contains(get(t, ctl, "part", "mid-0-1").GetWaiting(), "mid-0-0")
				})
			}
			w.Result(tk.GetLease(), `{}`)
		case name == "root":
			w.Compose(tk.GetLease(), &convergev1.Composition{Children: []*convergev1.Child{
				{Kind: "stack", KindVersion: 1, Name: "mid-0", Spec: []byte(`{}`)},
				{Kind: "stack", KindVersion: 1, Name: "mid-1", Spec: []byte(`{}`)},
				{Kind: "stack", KindVersion: 1, Name: "mid-2", Spec: []byte(`{}`)},
			}})
		default:
			// In mid-0, leaf 1 depends on leaf 0.
			var edges []*convergev1.Edge
			if name == "mid-0" {
				edges = []*convergev1.Edge{edge("mid-0-1", "mid-0-0")}
			}
			w.Compose(tk.GetLease(), &convergev1.Composition{Children: []*convergev1.Child{
				child(name+"-0", `{}`), child(name+"-1", `{}`), child(name+"-2", `{}`)}, Edges: edges})
		}
	}
	testkit.Eventually(t, "the composite Ready", func() bool { return get(t, ctl, "stack", "root").GetPhase() == "Ready" })
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}

	spans := recv.trace(traceID)
	byID := map[string]*tracepb.Span{}
	tasks := map[string]*tracepb.Span{}   // resource name → its task's span
	applies := map[string]*tracepb.Span{} // task span id → its apply span
	var api *tracepb.Span
	for _, s := range spans {
		byID[hex.EncodeToString(s.GetSpanId())] = s
		switch {
		case s.GetName() == "converge.v1.ControlService/ApplyResource":
			api = s
		case strings.HasPrefix(s.GetName(), "task "):
			tasks[attr(s, "converge.name")] = s
		case strings.HasPrefix(s.GetName(), "apply "):
			applies[hex.EncodeToString(s.GetParentSpanId())] = s
		}
	}
	if api == nil || hex.EncodeToString(api.GetParentSpanId()) != callerSpan {
		t.Fatalf("no API span under the caller's span among %d spans of the trace", len(spans))
	}
	if len(tasks) != 13 || len(applies) != 13 {
		t.Fatalf("%d task spans and %d apply spans in the trace, want 13 each", len(tasks), len(applies))
	}
	parentOf := func(name string) string {
		switch {
		case name == "root":
			return ""
		case strings.Count(name, "-") == 1:
			return "root"
		}
		return name[:strings.LastIndex(name, "-")]
	}
	for name, s := range tasks {
		id := hex.EncodeToString(s.GetSpanId())
		if want := "00-" + traceID + "-" + id + "-01"; sent[name] != want {
			t.Errorf("%s: the worker got traceparent %q, want its task span's %q", name, sent[name], want)
		}
		if applies[id] == nil {
			t.Errorf("%s: no apply span under its task span", name)
		}
		parent := byID[hex.EncodeToString(s.GetParentSpanId())]
		if name == "mid-0-1" {
			// The dependent was queued by the gate its dependency's apply
			// woke: the gate's span links to that apply.
			upstream := applies[hex.EncodeToString(tasks["mid-0-0"].GetSpanId())]
			if parent.GetName() != "gate" || !linksTo(parent, upstream) {
				t.Errorf("mid-0-1's task span's parent is %q with links %v, want the gate linked to mid-0-0's apply %x",
					parent.GetName(), parent.GetLinks(), upstream.GetSpanId())
			}
			continue
		}
		switch up := parentOf(name); {
		case up == "" && parent != api:
			t.Errorf("root's task span is not the API call's child: parent %v", parent.GetName())
		case up != "" && parent != applies[hex.EncodeToString(tasks[up].GetSpanId())]:
			t.Errorf("%s's task span is not the child of %s's apply span: parent %v", name, up, parent.GetName())
		}
	}
}

// withHeader is a transport that sends one more header, as an
// instrumented caller sends its traceparent.
type withHeader [2]string

func (h withHeader) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(h[0], h[1])
	return http.DefaultTransport.RoundTrip(req)
}

func linksTo(s, target *tracepb.Span) bool {
	for _, l := range s.GetLinks() {
		if string(l.GetSpanId()) == string(target.GetSpanId()) {
			return true
		}
	}
	return false
}
