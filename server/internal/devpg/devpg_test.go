package devpg

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/convergehq/converge/server/internal/testkit"
)

// start starts a cluster for one test and stops it on cleanup.
func start(t *testing.T, opts Options) *Cluster {
	t.Helper()
	begin := time.Now()
	c, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Logf("cluster started in %s on port %d", time.Since(begin).Round(time.Millisecond), c.Port())
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return c
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func show(t *testing.T, conn *pgx.Conn, setting string) string {
	t.Helper()
	var v string
	if err := conn.QueryRow(t.Context(), "SHOW "+setting).Scan(&v); err != nil {
		t.Fatalf("SHOW %s: %v", setting, err)
	}
	return v
}

func TestStartStop(t *testing.T) {
	t.Parallel()
	c := start(t, Options{})

	wantPrefix := "postgres://postgres@127.0.0.1:"
	if url := c.URL("postgres"); !strings.HasPrefix(url, wantPrefix) || !strings.HasSuffix(url, "/postgres?sslmode=disable") {
		t.Errorf("URL = %q, want %s<port>/postgres?sslmode=disable", url, wantPrefix)
	}
	conn := connect(t, c.URL("postgres"))
	for _, s := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		if got := show(t, conn, s); got != "off" {
			t.Errorf("fast profile: %s = %q, want off", s, got)
		}
	}
	if got := show(t, conn, "listen_addresses"); got != "127.0.0.1" {
		t.Errorf("listen_addresses = %q, want 127.0.0.1", got)
	}
	if got := show(t, conn, "server_encoding"); got != "UTF8" {
		t.Errorf("server_encoding = %q, want UTF8", got)
	}

	if err := c.CreateDatabase(t.Context(), "my db", ""); err != nil {
		t.Fatalf("CreateDatabase: %v", err)
	}
	var name string
	if err := connect(t, c.URL("my db")).QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil || name != "my db" {
		t.Fatalf("current_database() = %q, %v; want \"my db\"", name, err)
	}
	if err := c.CreateDatabase(t.Context(), "copy", "no such template"); err == nil || !strings.Contains(err.Error(), `"copy"`) {
		t.Errorf("CreateDatabase from a missing template: err = %v, want an error naming the database", err)
	}

	if fi, err := os.Stat(c.LogPath()); err != nil || fi.Size() == 0 {
		t.Errorf("server log %s: %v, want a non-empty file", c.LogPath(), err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Stop, %s: %v, want it removed", c.Dir(), err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v, want nil", err)
	}
	if err := c.Restart(t.Context()); err == nil {
		t.Error("Restart after Stop succeeded, want an error")
	}
}

func TestKeepAndLogWriter(t *testing.T) {
	t.Parallel()
	var log testkit.Buffer
	c := start(t, Options{Keep: true, Log: &log})
	t.Cleanup(func() { _ = os.RemoveAll(c.Dir()) })

	if c.LogPath() != "" {
		t.Errorf("LogPath = %q with Options.Log set, want \"\"", c.LogPath())
	}
	if !strings.Contains(log.String(), "ready to accept connections") {
		t.Errorf("Options.Log got %q, want the server's startup output", log.String())
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), "data", "PG_VERSION")); err != nil {
		t.Errorf("Keep: data directory gone after Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.Dir(), pidFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Keep: pid file still there after Stop (%v); the next sweep would remove the kept directory", err)
	}
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	c := start(t, Options{})
	port := c.Port()
	conn := connect(t, c.URL("postgres"))
	if _, err := conn.Exec(t.Context(), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(t.Context()); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if c.Port() != port {
		t.Errorf("Port after Restart = %d, want %d", c.Port(), port)
	}
	var v int
	if err := connect(t, c.URL("postgres")).QueryRow(t.Context(), "SELECT v FROM kept").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after Restart: SELECT v = %d, %v; want 42", v, err)
	}
}

func TestKillAndRecover(t *testing.T) {
	t.Parallel()
	c := start(t, Options{Durable: true})
	conn := connect(t, c.URL("postgres"))
	for _, s := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		if got := show(t, conn, s); got != "on" {
			t.Errorf("durable profile: %s = %q, want on", s, got)
		}
	}
	// A backend busy computing when the server dies never looks for its
	// postmaster; unless Kill ends it too, it keeps the restarted server
	// from starting. statement_timeout bounds it if Kill fails to.
	busy := connect(t, c.URL("postgres"))
	if _, err := busy.Exec(t.Context(), "SET statement_timeout = '60s'"); err != nil {
		t.Fatal(err)
	}
	busyDone := make(chan error, 1)
	go func() {
		_, err := busy.Exec(context.Background(), "SELECT count(*) FROM generate_series(1, 10000000000)")
		busyDone <- err
	}()
	type activity struct {
		Active int
		Err    error
	}
	testkit.PollWithin(t, 20*time.Second, "the busy query to be active", func() (a activity) {
		a.Err = conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT count(*) FROM generate_series%' AND state = 'active'").Scan(&a.Active)
		return a
	}, func(a activity) bool { return a.Err == nil && a.Active == 1 })
	if _, err := conn.Exec(t.Context(), "CREATE TABLE survived (v int); INSERT INTO survived VALUES (7)"); err != nil {
		t.Fatal(err)
	}

	if err := c.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := testkit.ReceiveWithin(t, 20*time.Second, busyDone, "the query running during Kill to end"); err == nil {
		t.Error("query running during Kill succeeded, want a connection error")
	}
	if err := c.Kill(); err == nil {
		t.Error("Kill of a dead server succeeded, want an error")
	}
	if err := c.Restart(t.Context()); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	var v int
	if err := connect(t, c.URL("postgres")).QueryRow(t.Context(), "SELECT v FROM survived").Scan(&v); err != nil || v != 7 {
		t.Fatalf("after Kill and Restart: SELECT v = %d, %v; want 7", v, err)
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	c := start(t, Options{InMemory: true, Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"max_connections":          "123",
		"synchronous_commit":       "local", // overrides the profile
		"min_wal_size":             "48MB",  // overrides InMemory's
	}})
	if mem := memDir(); mem == "" {
		t.Logf("no memory file system with room here; InMemory fell back to %s", os.TempDir())
	} else if !strings.HasPrefix(c.Dir(), mem+string(filepath.Separator)) {
		t.Errorf("InMemory: Dir = %s, want it under %s", c.Dir(), mem)
	}
	conn := connect(t, c.URL("postgres"))
	for setting, want := range map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"max_connections":          "123",
		"synchronous_commit":       "local",
		"fsync":                    "off",
		"max_wal_size":             "256MB",
		"min_wal_size":             "48MB",
	} {
		if got := show(t, conn, setting); got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
	if _, err := conn.Exec(t.Context(), "CREATE EXTENSION pg_stat_statements; SELECT count(*) FROM pg_stat_statements"); err != nil {
		t.Errorf("pg_stat_statements not usable: %v", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Port: 70000}, "Options.Port"},
		{Options{StartTimeout: -time.Second}, "Options.StartTimeout"},
		{Options{Settings: map[string]string{"a=b": "c"}}, `Options.Settings: "a=b"`},
		{Options{Settings: map[string]string{"work_mem": "1\x00"}}, `Options.Settings["work_mem"]`},
	} {
		_, err := Start(t.Context(), tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) error = %v, want one naming %s", tc.opts, err, tc.want)
		}
	}
}

func TestPortInUseFailsFast(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	begin := time.Now()
	c, err := Start(t.Context(), Options{Port: port, StartTimeout: 25 * time.Second})
	if err == nil {
		_ = c.Stop()
		t.Fatalf("Start on busy port %d succeeded", port)
	}
	if !errors.Is(err, errPortBusy) || !strings.Contains(err.Error(), "could not bind") {
		t.Errorf("error = %v, want the port-in-use failure quoting the server's output", err)
	}
	if took := time.Since(begin); took > 20*time.Second {
		t.Errorf("Start took %s to notice the server exited, want well under StartTimeout", took)
	}
}

func TestPicksAnotherPortWhenTaken(t *testing.T) {
	// Not parallel: it replaces freePort. The port it hands out first is
	// taken by another cluster, which must not be mistaken for the new one.
	other := start(t, Options{})
	busy := other.Port()
	orig := freePort
	calls := 0
	freePort = func() (int, error) {
		calls++
		if calls == 1 {
			return busy, nil
		}
		return orig()
	}
	t.Cleanup(func() { freePort = orig })

	c := start(t, Options{})
	if c.Port() == busy || calls < 2 {
		t.Errorf("Port = %d after %d picks; want a port other than the busy %d", c.Port(), calls, busy)
	}
	var dir string
	if err := connect(t, c.URL("postgres")).QueryRow(t.Context(), "SHOW data_directory").Scan(&dir); err != nil || dir != filepath.Join(c.Dir(), "data") {
		t.Errorf("URL reaches data directory %q (%v), want %q", dir, err, filepath.Join(c.Dir(), "data"))
	}
}
