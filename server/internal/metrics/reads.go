package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ReadStats is the read replica's state and the API reads routed so far
// (package readroute).
type ReadStats struct {
	Up       bool
	Lag      time.Duration
	LagBytes uint64
	Reads    []ReadCount
}

// ReadCount is how many reads ran on one source for one reason.
type ReadCount struct {
	Source, Reason string
	N              int64
}

// WatchReads reports the read replica at scrape time from stats.
func (m *Metrics) WatchReads(stats func() ReadStats) error {
	return m.register(&readCollector{stats: stats})
}

var (
	replicaUp       = prometheus.NewDesc("converge_read_replica_up", "1 when the last sample reached the read replica and found it in recovery, else 0 (reads then go to the primary).", nil, nil)
	replicaLag      = prometheus.NewDesc("converge_read_replica_lag_seconds", "How far the read replica's replay was behind the primary at the last sample, to within 0.1 s.", nil, nil)
	replicaLagBytes = prometheus.NewDesc("converge_read_replica_lag_bytes", "WAL bytes the read replica had yet to replay at the last sample.", nil, nil)
	routedReads     = prometheus.NewDesc("converge_reads_total", "API reads by the database that served them (replica or primary) and why there.", []string{"source", "reason"}, nil)
)

type readCollector struct {
	stats func() ReadStats
}

func (c *readCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{replicaUp, replicaLag, replicaLagBytes, routedReads} {
		ch <- d
	}
}

func (c *readCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	up := 0.0
	if s.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(replicaUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(replicaLag, prometheus.GaugeValue, s.Lag.Seconds())
	ch <- prometheus.MustNewConstMetric(replicaLagBytes, prometheus.GaugeValue, float64(s.LagBytes))
	for _, r := range s.Reads {
		ch <- prometheus.MustNewConstMetric(routedReads, prometheus.CounterValue, float64(r.N), r.Source, r.Reason)
	}
}
