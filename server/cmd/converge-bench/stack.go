package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/devpg"
)

// stack is one measured setup: a fresh database, the server (one
// replica, or with -split a control replica and -brokers broker replicas)
// and one worker per broker.
type stack struct {
	db      string
	pool    *pgxpool.Pool
	server  *proc   // serves the API
	broker  *proc   // serves workers: the first of brokers
	brokers []*proc // every process serving workers (the server unless split)
	worker  *proc   // the first of workers
	workers []*proc // workers[i] dials brokers[i]
	client  *client.Client
	apiURL  string // the base URL client calls
	logDir  string
	// brokerURLs are the addresses workers dial, one per broker.
	brokerURLs []string
}

// startStack creates database db and starts the server and one worker
// per broker (workerBin with workerArgs, plus -server; none when
// workerBin is "").
func startStack(ctx context.Context, o options, cluster *devpg.Cluster, db string, workerBin string, workerArgs ...string) (*stack, error) {
	if err := freshDatabase(ctx, cluster, db, o.keep); err != nil {
		return nil, err
	}
	url := cluster.URL(db)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	s := &stack{db: db, pool: pool}
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		s.close()
		return nil, fmt.Errorf("pg_stat_statements: %w", err)
	}
	if s.logDir, err = os.MkdirTemp("", "converge-bench-logs-*"); err != nil {
		s.close()
		return nil, err
	}
	serve := func(name, role string, extra ...string) (*proc, string, error) {
		port, err := freePort()
		if err != nil {
			return nil, "", err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		args := append([]string{"serve", "--database-url", url, "--listen", addr, "--log-level", "warn", "--role", role}, extra...)
		args = append(args, strings.Fields(o.serveFlags)...)
		p, err := start(name, s.logDir, o.convergeBin, args...)
		if err != nil {
			return nil, "", err
		}
		return p, "http://" + addr, waitHTTP(ctx, "http://"+addr+"/readyz", p)
	}
	role := "all"
	if o.split {
		role = "control"
	}
	var extra []string
	if o.profile != "" {
		extra = append(extra, "--pprof-listen", o.profile)
	}
	var base string
	if s.server, base, err = serve("converge", role, extra...); err != nil {
		s.close()
		return nil, err
	}
	brokerURLs := []string{base}
	if o.split {
		// Other replicas run the broker; workers dial them, the load goes
		// to the control replica, and wake-ups cross by NOTIFY.
		s.brokers, brokerURLs = nil, nil
		for i := range max(o.brokers, 1) {
			b, url, err := serve(fmt.Sprintf("broker-%d", i+1), "broker", "--migrate=false")
			if b != nil {
				s.brokers = append(s.brokers, b)
			}
			if err != nil {
				s.close()
				return nil, err
			}
			brokerURLs = append(brokerURLs, url)
		}
	} else {
		s.brokers = []*proc{s.server}
	}
	s.broker = s.brokers[0]
	s.brokerURLs = brokerURLs
	s.apiURL = base
	s.client = client.New(base, client.WithHTTPClient(http.DefaultClient))
	if workerBin != "" {
		if err := s.startWorkers(workerBin, workerArgs...); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// startWorkers starts one worker per broker (workerBin with workerArgs,
// plus -server). startStack calls it unless its workerBin is "", which
// leaves the queue without a worker until the caller starts them (W7).
func (s *stack) startWorkers(workerBin string, workerArgs ...string) error {
	for _, url := range s.brokerURLs {
		w, err := start(fmt.Sprintf("worker-%d", len(s.workers)+1), s.logDir, workerBin, append(slices.Clone(workerArgs), "-server", url)...)
		if err != nil {
			return err
		}
		s.workers = append(s.workers, w)
	}
	s.worker = s.workers[0]
	return nil
}

func (s *stack) close() {
	for _, w := range s.workers {
		w.stop()
	}
	for _, b := range s.brokers {
		if b != s.server {
			b.stop()
		}
	}
	s.server.stop()
	if s.pool != nil {
		s.pool.Close()
	}
	if s.logDir != "" {
		_ = os.RemoveAll(s.logDir)
	}
}

// freshDatabase creates db on a cluster left as if nothing had run before
// it: the databases of earlier runs are dropped (autovacuum would work
// through their 100,000-row tables during this run) and a checkpoint
// writes out what they dirtied, so that no run pays for the one before.
// With -keep the earlier databases stay, for inspection.
func freshDatabase(ctx context.Context, cluster *devpg.Cluster, db string, keep bool) error {
	conn, err := pgx.Connect(ctx, cluster.URL("postgres"))
	if err != nil {
		return fmt.Errorf("settling the cluster: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if !keep {
		rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE NOT datistemplate AND datname <> 'postgres'`)
		if err != nil {
			return fmt.Errorf("settling the cluster: %w", err)
		}
		old, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return fmt.Errorf("settling the cluster: %w", err)
		}
		for _, name := range old {
			if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("dropping %s: %w", name, err)
			}
		}
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("settling the cluster: %w", err)
	}
	return cluster.CreateDatabase(ctx, db, "")
}
