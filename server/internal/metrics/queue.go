package metrics

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// QueueDepth is how many tasks of one kind and trigger wait in the queue.
type QueueDepth struct {
	Kind    string
	Trigger string
	Tasks   int64
}

// QueueFunc reads the queue's depth from the database.
type QueueFunc func(context.Context) ([]QueueDepth, error)

// DefaultQueueTTL is how long a queue reading is reused: scrapes, however
// frequent or from however many scrapers, query the database at most once
// per TTL.
const DefaultQueueTTL = 5 * time.Second

// queueTimeout bounds one reading, so a slow database cannot hold a scrape.
const queueTimeout = 2 * time.Second

var (
	queueDepth      = prometheus.NewDesc("converge_queue_tasks", "Unclaimed tasks in the queue (ready or waiting for a retry), by kind and trigger.", []string{"kind", "trigger"}, nil)
	queueReadFailed = prometheus.NewDesc("converge_queue_read_errors_total", "Queue depth readings that failed.", nil, nil)
)

// WatchQueue reports the queue depth read by read, reusing a reading for
// ttl (DefaultQueueTTL if ttl <= 0). A failed reading keeps the last good
// one and is logged.
func (m *Metrics) WatchQueue(read QueueFunc, ttl time.Duration, log *slog.Logger) error {
	if ttl <= 0 {
		ttl = DefaultQueueTTL
	}
	if log == nil {
		log = slog.Default()
	}
	return m.register(&queueCollector{read: read, ttl: ttl, log: log, seen: map[[2]string]bool{}, now: time.Now})
}

type queueCollector struct {
	read QueueFunc
	ttl  time.Duration
	log  *slog.Logger
	now  func() time.Time

	mu     sync.Mutex
	at     time.Time
	last   []QueueDepth
	failed int64
	// seen holds every (kind, trigger) reported once, so an emptied queue
	// reads 0 instead of vanishing.
	seen map[[2]string]bool
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepth
	ch <- queueReadFailed
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.now(); c.at.IsZero() || now.Sub(c.at) >= c.ttl {
		ctx, cancel := context.WithTimeout(context.Background(), queueTimeout)
		depths, err := c.read(ctx)
		cancel()
		// A failure also waits a TTL, so an unreachable database is not
		// asked on every scrape.
		c.at = now
		if err != nil {
			c.failed++
			c.log.Warn("reading the queue depth for metrics failed", "err", err)
		} else {
			c.last = depths
			for _, d := range depths {
				c.seen[[2]string{d.Kind, d.Trigger}] = true
			}
		}
	}
	have := map[[2]string]int64{}
	for _, d := range c.last {
		have[[2]string{d.Kind, d.Trigger}] += d.Tasks
	}
	for k := range c.seen {
		ch <- prometheus.MustNewConstMetric(queueDepth, prometheus.GaugeValue, float64(have[k]), k[0], k[1])
	}
	ch <- prometheus.MustNewConstMetric(queueReadFailed, prometheus.CounterValue, float64(c.failed))
}
