package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
)

// watchAll registers the scrape-time sources of m: both pools, the queue
// depth, the broker's state (when this process runs one) and the NOTIFY
// counters.
func watchAll(m *metrics.Metrics, st *store.Store, pool, relaxed *pgxpool.Pool, b *broker.Broker,
	rec *taskrec.Recorder, bus *notify.Bus, log *slog.Logger) error {
	if err := m.WatchPools(map[string]*pgxpool.Pool{"requests": pool, "relaxed": relaxed}); err != nil {
		return err
	}
	queue := func(ctx context.Context) ([]metrics.QueueDepth, error) {
		ds, err := st.QueueDepths(ctx)
		out := make([]metrics.QueueDepth, len(ds))
		for i, d := range ds {
			out[i] = metrics.QueueDepth{Kind: d.Kind, Trigger: d.Trigger, Tasks: d.Tasks}
		}
		return out, err
	}
	if err := m.WatchQueue(queue, 0, log); err != nil {
		return err
	}
	if b != nil {
		if err := m.WatchBroker(b.Stats); err != nil {
			return err
		}
	}
	if rec != nil {
		if err := m.WatchTaskRecords(rec.Written, rec.Dropped); err != nil {
			return err
		}
	}
	return m.WatchNotify(bus.Sent, bus.Received)
}

// metricsListener serves m, and the health endpoints, on their own
// plaintext listener at addr.
func metricsListener(addr string, m *metrics.Metrics, pool *pgxpool.Pool) (*listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+metrics.Path, m.Handler())
	mountHealth(mux, pool)
	return newListener("metrics listener", ln, mux), nil
}
