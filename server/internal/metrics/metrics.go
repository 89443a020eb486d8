// Package metrics exposes a Converge server's Prometheus metrics: API
// latency, claims and completions per kind, queue depth, tasks in flight,
// connected workers, database pool and NOTIFY counters, and the Go runtime
// and process collectors. It is served on a listener of its own, never on
// the API port.
//
// Counters on the hot path are the client's atomic counters, and each
// kind's children are created once and then found without a lock, so
// counting adds no lock to claiming or applying results.
package metrics

import (
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics handler is mounted.
const Path = "/metrics"

// Outcome is how the broker finished a task.
type Outcome int

// Outcomes of a task result.
const (
	// Success: a successful result was applied.
	Success Outcome = iota
	// Transient: a failure was applied and the task will be retried.
	Transient
	// Terminal: a failure was applied and the task will not be retried.
	Terminal
	// Superseded: the resource moved to a newer generation while the task
	// ran; the task runs again.
	Superseded
	// Stale: the lease was no longer current, or the result could not be
	// applied; nothing was written.
	Stale
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"success", "transient", "terminal", "superseded", "stale"}

// String is the outcome's label value.
func (o Outcome) String() string {
	if o < 0 || o >= numOutcomes {
		return "unknown"
	}
	return outcomeNames[o]
}

// Metrics is one server's metrics registry. A nil *Metrics is valid and
// records nothing, so components work without metrics in tests.
type Metrics struct {
	reg         *prometheus.Registry
	rpcSeconds  *prometheus.HistogramVec
	claims      *prometheus.CounterVec
	completions *prometheus.CounterVec

	// kinds maps a kind name to its *kindCounters. sync.Map reads are
	// lock-free once a kind has been seen.
	kinds sync.Map
	// rpcChildren maps [procedure, code] to its histogram child.
	rpcChildren sync.Map
}

// kindCounters are one kind's precreated counter children.
type kindCounters struct {
	claims      prometheus.Counter
	completions [numOutcomes]prometheus.Counter
}

// New returns a registry with the Converge metrics and the Go runtime and
// process collectors registered. Add scrape-time sources with the Watch
// methods.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		rpcSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "converge_api_request_duration_seconds",
			Help:    "Latency of API and worker RPCs, by procedure and Connect code (streams: their whole life).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"procedure", "code"}),
		claims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "converge_tasks_claimed_total",
			Help: "Tasks claimed from the queue by this broker, by kind.",
		}, []string{"kind"}),
		completions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "converge_tasks_completed_total",
			Help: "Task results handled by this broker, by kind and outcome (success, transient, terminal, superseded, stale).",
		}, []string{"kind", "outcome"}),
	}
	m.reg.MustRegister(m.rpcSeconds, m.claims, m.completions,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Claimed counts n tasks of kind claimed.
func (m *Metrics) Claimed(kind string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.kind(kind).claims.Add(float64(n))
}

// Completed counts one task result of kind with outcome o.
func (m *Metrics) Completed(kind string, o Outcome) {
	if m == nil || o < 0 || o >= numOutcomes {
		return
	}
	m.kind(kind).completions[o].Inc()
}

// kind returns kind's counters, creating every child of it at first sight.
func (m *Metrics) kind(kind string) *kindCounters {
	if c, ok := m.kinds.Load(kind); ok {
		return c.(*kindCounters)
	}
	c := &kindCounters{claims: m.claims.WithLabelValues(kind)}
	for o := range numOutcomes {
		c.completions[o] = m.completions.WithLabelValues(kind, o.String())
	}
	actual, _ := m.kinds.LoadOrStore(kind, c)
	return actual.(*kindCounters)
}

// register adds a collector; collectors of this package have fixed,
// distinct descriptors, so registration fails only on a programming error,
// which is reported rather than panicking.
func (m *Metrics) register(c prometheus.Collector) error {
	return m.reg.Register(c)
}
