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
	"github.com/convergehq/converge/server/internal/readroute"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
)

// watchAll registers the scrape-time sources of m: the pools, the queue
// depth, the broker's state (when this process runs one), the read
// replica's lag and routing (when there is one) and the NOTIFY counters.
func watchAll(m *metrics.Metrics, st *store.Store, pool, relaxed *pgxpool.Pool, b *broker.Broker,
	rec *taskrec.Recorder, bus *notify.Bus, reads *readroute.Router, log *slog.Logger) error {
	pools := map[string]*pgxpool.Pool{"requests": pool, "relaxed": relaxed}
	if reads != nil {
		pools["replica"] = reads.Replica()
		if err := m.WatchReads(func() metrics.ReadStats {
			st := reads.Stats()
			out := metrics.ReadStats{Up: st.Up, Lag: st.Lag, LagBytes: st.LagBytes}
			for _, c := range st.Reads {
				out.Reads = append(out.Reads, metrics.ReadCount{Source: c.Source, Reason: c.Reason, N: c.N})
			}
			return out
		}); err != nil {
			return err
		}
	}
	if err := m.WatchPools(pools); err != nil {
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
