package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	taskRecordsWritten = prometheus.NewDesc("converge_task_records_written_total", "Task records written.", nil, nil)
	taskRecordsDropped = prometheus.NewDesc("converge_task_records_dropped_total",
		"Task records dropped: the recorder's buffer was full, or their batch could not be written.", nil, nil)
)

// WatchTaskRecords reports the task recorder's counters read by written
// and dropped.
func (m *Metrics) WatchTaskRecords(written, dropped func() int64) error {
	return m.register(newFuncCollector(func(ch chan<- prometheus.Metric) {
		ch <- prometheus.MustNewConstMetric(taskRecordsWritten, prometheus.CounterValue, float64(written()))
		ch <- prometheus.MustNewConstMetric(taskRecordsDropped, prometheus.CounterValue, float64(dropped()))
	}, taskRecordsWritten, taskRecordsDropped))
}
