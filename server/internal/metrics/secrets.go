package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	secretStale = prometheus.NewDesc("converge_secret_stale_rows",
		"Rows holding a secret value sealed by a retired key at the last rotation pass (-1 before the first; 0 once rotation is done).", nil, nil)
	secretResealed = prometheus.NewDesc("converge_secret_resealed_rows_total", "Rows re-sealed under the current key by rotation.", nil, nil)
)

// WatchSecrets reports the secret rotator's progress read by stale and
// resealed.
func (m *Metrics) WatchSecrets(stale, resealed func() int64) error {
	return m.register(newFuncCollector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(secretStale, prometheus.GaugeValue, float64(stale()))
		ch <- prometheus.MustNewConstMetric(secretResealed, prometheus.CounterValue, float64(resealed()))
	}, secretStale, secretResealed))
}
