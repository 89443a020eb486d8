package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// BrokerStats is a broker's state at one instant.
type BrokerStats struct {
	// Workers is the number of connected worker streams.
	Workers int
	// InFlight counts, by kind, the tasks this broker holds: waiting for
	// a free slot, at a worker, or with a result being applied.
	InFlight map[string]int
}

var (
	brokerWorkers  = prometheus.NewDesc("converge_workers_connected", "Worker streams connected to this broker.", nil, nil)
	brokerInFlight = prometheus.NewDesc("converge_tasks_in_flight", "Tasks this broker holds (waiting for a slot, at a worker, or with a result being applied), by kind.", []string{"kind"}, nil)
	notifySent     = prometheus.NewDesc("converge_notify_sent_total", "NOTIFY statements sent to wake other replicas.", nil, nil)
	notifyReceived = prometheus.NewDesc("converge_notify_received_total", "Notifications received from other replicas.", nil, nil)
)

// WatchBroker reports the broker's connected workers and tasks in flight,
// read by stats at scrape time. Kinds seen once keep reporting (0 when
// idle), so a drained kind does not vanish.
func (m *Metrics) WatchBroker(stats func() BrokerStats) error {
	return m.register(&brokerCollector{stats: stats, seen: map[string]bool{}})
}

// WatchNotify reports the NOTIFY counters read by sent and received.
func (m *Metrics) WatchNotify(sent, received func() int64) error {
	return m.register(newFuncCollector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(notifySent, prometheus.CounterValue, float64(sent()))
		ch <- prometheus.MustNewConstMetric(notifyReceived, prometheus.CounterValue, float64(received()))
	}, notifySent, notifyReceived))
}

type brokerCollector struct {
	stats func() BrokerStats
	// The registry may call Collect concurrently; mu guards seen.
	mu   sync.Mutex
	seen map[string]bool
}

func (c *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- brokerWorkers
	ch <- brokerInFlight
}

func (c *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(brokerWorkers, prometheus.GaugeValue, float64(s.Workers))
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range s.InFlight {
		c.seen[k] = true
	}
	for k := range c.seen {
		ch <- prometheus.MustNewConstMetric(brokerInFlight, prometheus.GaugeValue, float64(s.InFlight[k]), k)
	}
}

type funcCollector struct {
	collect func(chan<- prometheus.Metric)
	descs   []*prometheus.Desc
}

func newFuncCollector(collect func(chan<- prometheus.Metric), descs ...*prometheus.Desc) prometheus.Collector {
	return &funcCollector{collect: collect, descs: descs}
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }
