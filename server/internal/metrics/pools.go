package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// WatchPools reports the connection pools' statistics at scrape time,
// each under its name in the pool label.
func (m *Metrics) WatchPools(pools map[string]*pgxpool.Pool) error {
	return m.register(&poolCollector{pools: pools})
}

var (
	poolLabels      = []string{"pool"}
	poolAcquired    = prometheus.NewDesc("converge_db_pool_acquired_connections", "Connections in use.", poolLabels, nil)
	poolIdle        = prometheus.NewDesc("converge_db_pool_idle_connections", "Idle connections.", poolLabels, nil)
	poolTotal       = prometheus.NewDesc("converge_db_pool_connections", "Open connections (acquired, idle and being opened).", poolLabels, nil)
	poolMax         = prometheus.NewDesc("converge_db_pool_max_connections", "Largest size of the pool.", poolLabels, nil)
	poolAcquires    = prometheus.NewDesc("converge_db_pool_acquires_total", "Connections acquired from the pool.", poolLabels, nil)
	poolWaits       = prometheus.NewDesc("converge_db_pool_waits_total", "Acquires that had to wait for a connection.", poolLabels, nil)
	poolWaitSeconds = prometheus.NewDesc("converge_db_pool_wait_seconds_total", "Time spent waiting for a connection.", poolLabels, nil)
	poolCanceled    = prometheus.NewDesc("converge_db_pool_canceled_acquires_total", "Acquires canceled while waiting.", poolLabels, nil)
)

type poolCollector struct {
	pools map[string]*pgxpool.Pool
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolTotal, poolMax, poolAcquires, poolWaits, poolWaitSeconds, poolCanceled} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for name, p := range c.pools {
		s := p.Stat()
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
		}
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, name)
		}
		gauge(poolAcquired, float64(s.AcquiredConns()))
		gauge(poolIdle, float64(s.IdleConns()))
		gauge(poolTotal, float64(s.TotalConns()))
		gauge(poolMax, float64(s.MaxConns()))
		counter(poolAcquires, float64(s.AcquireCount()))
		counter(poolWaits, float64(s.EmptyAcquireCount()))
		counter(poolWaitSeconds, s.EmptyAcquireWaitTime().Seconds())
		counter(poolCanceled, float64(s.CanceledAcquireCount()))
	}
}
