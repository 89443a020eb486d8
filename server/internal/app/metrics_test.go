package app_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
)

// startWithMetrics starts a server with a metrics listener on dbURL and
// returns it with its API base URL.
func startWithMetrics(t *testing.T, dbURL string) (*app.App, string) {
	t.Helper()
	a, err := app.Start(context.Background(), app.Config{
		DatabaseURL: dbURL, Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", Role: app.RoleAll,
		Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
			PollInterval: 200 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	return a, "http://" + a.Addr().String()
}

// scrape fetches /metrics and returns its samples by series (name and
// labels as exposed).
func scrape(t *testing.T, a *app.App) map[string]float64 {
	t.Helper()
	code, body := httpGet(t, "http://"+a.MetricsAddr().String()+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("unparsable sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

func TestMetricsMoveWithReconciles(t *testing.T) {
	db := pgtest.New(t)
	a, base := startWithMetrics(t, db.URL)
	ctl := convergev1connect.NewControlServiceClient(http.DefaultClient, base)
	wrk := convergev1connect.NewWorkerServiceClient(testkit.H2C(), base)
	applyGreeting(t, ctl)
	for _, name := range []string{"a", "b", "c"} {
		applyResource(t, ctl, name, map[string]any{"name": name})
	}

	// Before any worker: three tasks wait, none claimed.
	m := scrape(t, a)
	if got := m[`converge_queue_tasks{kind="greeting",trigger="specChange"}`]; got != 3 {
		t.Fatalf("queue depth = %v, want 3", got)
	}
	if got := m[`converge_api_request_duration_seconds_count{code="ok",procedure="/converge.v1.ControlService/ApplyResource"}`]; got != 3 {
		t.Fatalf("ApplyResource latency count = %v, want 3", got)
	}
	if got := m["converge_workers_connected"]; got != 0 {
		t.Fatalf("workers = %v, want 0", got)
	}

	w, _ := connectWorker(t, wrk, 4)
	tasks := []*convergev1.Task{w.Task(), w.Task(), w.Task()}
	m = scrape(t, a)
	if m["converge_workers_connected"] != 1 || m[`converge_tasks_in_flight{kind="greeting"}`] != 3 ||
		m[`converge_tasks_claimed_total{kind="greeting"}`] != 3 {
		t.Fatalf("with three tasks running: workers %v, in flight %v, claimed %v", m["converge_workers_connected"],
			m[`converge_tasks_in_flight{kind="greeting"}`], m[`converge_tasks_claimed_total{kind="greeting"}`])
	}
	// Two succeed; one reports a status its schema refuses: terminal.
	w.Result(tasks[0].GetLease(), `{"message":"hi"}`)
	w.Result(tasks[1].GetLease(), `{"message":"hi"}`)
	w.Result(tasks[2].GetLease(), `{"message":42}`)
	for range 3 {
		w.Ack()
	}

	type completions struct{ Success, Terminal, InFlight float64 }
	testkit.Poll(t, "2 successes, 1 terminal failure and none in flight", func() completions {
		m = scrape(t, a)
		return completions{m[`converge_tasks_completed_total{kind="greeting",outcome="success",reason=""}`],
			m[`converge_tasks_completed_total{kind="greeting",outcome="terminal",reason=""}`], m[`converge_tasks_in_flight{kind="greeting"}`]}
	}, func(c completions) bool { return c == completions{Success: 2, Terminal: 1} })
	for _, series := range []string{
		`converge_tasks_completed_total{kind="greeting",outcome="transient",reason=""}`,
		`converge_tasks_completed_total{kind="greeting",outcome="superseded",reason=""}`,
	} {
		if v, ok := m[series]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want a 0 series", series, v, ok)
		}
	}
	for _, pool := range []string{"requests", "relaxed"} {
		if m[`converge_db_pool_max_connections{pool="`+pool+`"}`] <= 0 || m[`converge_db_pool_acquires_total{pool="`+pool+`"}`] <= 0 {
			t.Errorf("pool %s stats missing or zero", pool)
		}
	}
	for _, series := range []string{"converge_notify_sent_total", "converge_notify_received_total", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := m[series]; !ok {
			t.Errorf("scrape lacks %s", series)
		}
	}
	// Metrics are never served on the API port.
	if code, _ := httpGet(t, base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the API port: %d, want 404", code)
	}
}

func TestHealthzNeedsNoDatabaseReadyzDoes(t *testing.T) {
	cluster := pgtest.NewCluster(t, devpg.Options{InMemory: true})
	a, base := startWithMetrics(t, pgtest.MigratedDB(t, cluster))
	// The metrics listener serves health too: probes reach it behind mTLS.
	metricsBase := "http://" + a.MetricsAddr().String()
	for _, path := range []string{base + "/healthz", base + "/readyz", metricsBase + "/healthz", metricsBase + "/readyz"} {
		if code, body := httpGet(t, path); code != http.StatusOK {
			t.Fatalf("GET %s with the database up: %d %s", path, code, body)
		}
	}
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		Code int
		Body string
	}
	testkit.Poll(t, "GET /readyz to answer 503 with the database stopped", func() answer {
		code, body := httpGet(t, base+"/readyz")
		return answer{code, body}
	}, func(a answer) bool {
		return a.Code == http.StatusServiceUnavailable && strings.Contains(a.Body, "database unreachable")
	})
	for _, path := range []string{base + "/healthz", metricsBase + "/healthz"} {
		if code, body := httpGet(t, path); code != http.StatusOK {
			t.Fatalf("GET %s with the database stopped: %d %s", path, code, body)
		}
	}
	if code, _ := httpGet(t, metricsBase+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("GET %s/readyz with the database stopped: %d, want 503", metricsBase, code)
	}
	// Scrapes still answer; the queue reading fails and is counted.
	if _, ok := scrape(t, a)["converge_queue_read_errors_total"]; !ok {
		t.Fatal("scrape with the database stopped lacks converge_queue_read_errors_total")
	}
}
