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
	"strconv"
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
	refusals    *prometheus.CounterVec

	// kinds maps a kind name to its *kindCounters. sync.Map reads are
	// lock-free once a kind has been seen.
	kinds sync.Map
	// rpcChildren maps [procedure, code] to its histogram child.
	rpcChildren sync.Map
}

// kindCounters are one kind's precreated counter children.
type kindCounters struct {
	claims prometheus.Counter
	// completions are the children without a reason.
	completions [numOutcomes]prometheus.Counter
	// byReason maps a reasonKey to its child, made at first sight; codes
	// counts the distinct codes seen, bounded by MaxReasonsPerKind.
	byReason sync.Map
	mu       sync.Mutex
	codes    map[string]bool
}

type reasonKey struct {
	outcome Outcome
	reason  string
}

// MaxReasonsPerKind bounds the distinct reason codes counted per kind: the
// protocol bounds a code's syntax, not how many a worker may invent, so
// codes past the first MaxReasonsPerKind are counted as OtherReasons.
const MaxReasonsPerKind = 64

// OtherReasons is the reason label of codes past MaxReasonsPerKind. It is
// not a valid code, so it cannot be mistaken for one.
const OtherReasons = "_other"

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
			Help: "Task results handled by this broker, by kind, outcome (success, transient, terminal, superseded, stale) " +
				"and the failure's reason code (empty when the worker gave none; " + OtherReasons + " past " +
				strconv.Itoa(MaxReasonsPerKind) + " distinct codes of one kind).",
		}, []string{"kind", "outcome", "reason"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "converge_admission_refused_total",
			Help: "Applies this replica refused because the kind's backlog of reconciles reached --max-backlog, by kind.",
		}, []string{"kind"}),
	}
	m.reg.MustRegister(m.rpcSeconds, m.claims, m.completions, m.refusals,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition format, or in
// OpenMetrics (which carries the latency histograms' trace exemplars) to a
// scraper that asks for it.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Refused counts one apply of kind refused by admission.
func (m *Metrics) Refused(kind string) {
	if m == nil {
		return
	}
	m.refusals.WithLabelValues(kind).Inc()
}

// Claimed counts n tasks of kind claimed.
func (m *Metrics) Claimed(kind string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.kind(kind).claims.Add(float64(n))
}

// Completed counts one task result of kind with outcome o and the
// failure's reason code ("" for none).
func (m *Metrics) Completed(kind string, o Outcome, reason string) {
	if m == nil || o < 0 || o >= numOutcomes {
		return
	}
	c := m.kind(kind)
	if reason == "" {
		c.completions[o].Inc()
		return
	}
	key := reasonKey{o, reason}
	if child, ok := c.byReason.Load(key); ok {
		child.(prometheus.Counter).Inc()
		return
	}
	c.mu.Lock()
	if !c.codes[reason] {
		if len(c.codes) >= MaxReasonsPerKind {
			key.reason = OtherReasons
		} else {
			c.codes[reason] = true
		}
	}
	c.mu.Unlock()
	child, _ := c.byReason.LoadOrStore(key, m.completions.WithLabelValues(kind, o.String(), key.reason))
	child.(prometheus.Counter).Inc()
}

// kind returns kind's counters, creating every child of it at first sight.
func (m *Metrics) kind(kind string) *kindCounters {
	if c, ok := m.kinds.Load(kind); ok {
		return c.(*kindCounters)
	}
	c := &kindCounters{claims: m.claims.WithLabelValues(kind), codes: map[string]bool{}}
	for o := range numOutcomes {
		c.completions[o] = m.completions.WithLabelValues(kind, o.String(), "")
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
