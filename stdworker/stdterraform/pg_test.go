package stdterraform

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startPostgres starts a throwaway PostgreSQL cluster for the test and
// returns its URL, or skips saying why it cannot. As root, PostgreSQL runs
// as the "postgres" user (initdb refuses root).
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		t.Skip("no PostgreSQL server binaries (initdb) under /usr/lib/postgresql/*/bin or on PATH; skipping the pg backend test")
	}
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user to run PostgreSQL as; skipping the pg backend test")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err := os.MkdirTemp("", "stdterraform-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	pg := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off")
	pg.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	var log strings.Builder
	pg.Stdout, pg.Stderr = &log, &log
	if err := pg.Start(); err != nil {
		t.Fatalf("starting postgres: %v", err)
	}
	t.Cleanup(func() {
		_ = pg.Process.Signal(syscall.SIGINT)
		_ = pg.Wait()
	})
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, url)
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres not ready after 30s: %v\n%s", err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postgresBin finds the directory of initdb and postgres.
func postgresBin() string {
	if matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1])
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	return ""
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestPGBackend(t *testing.T) {
	bin := terraformBinary(t)
	url := startPostgres(t)
	h := newTestHandler(t, config{Binary: bin})
	cfg := map[string]any{"backend": map[string]any{"type": "pg", "conn_str": url}}
	spec := map[string]any{"source": "./hello", "variables": map[string]any{"name": "pg"}}
	res, err := h.apply(testCtx(t), task(t, "inpg", spec, cfg))
	if err != nil {
		t.Fatalf("apply with the pg backend: %v", err)
	}
	schema := pgSchema(defaultSchemaPrefix, "default", "std.terraform", "inpg")
	if st := res.Status.(status); !strings.Contains(st.State, "pg schema "+schema) {
		t.Errorf("status.state = %q, want it to name schema %s", st.State, schema)
	}
	if n := pgResources(t, url, schema); n != 1 {
		t.Errorf("resources in the pg state after apply = %d, want 1", n)
	}
	if _, err := h.destroy(testCtx(t), task(t, "inpg", spec, cfg)); err != nil {
		t.Fatalf("destroy with the pg backend: %v", err)
	}
	if n := pgResources(t, url, schema); n != 0 {
		t.Errorf("resources in the pg state after destroy = %d, want 0", n)
	}
}

// pgResources counts the resources in the default workspace's state held
// in schema.
func pgResources(t *testing.T, url, schema string) int {
	t.Helper()
	ctx := testCtx(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	q := fmt.Sprintf(`SELECT coalesce(jsonb_array_length(data::jsonb -> 'resources'), 0) FROM %s.states WHERE name = 'default'`, pgx.Identifier{schema}.Sanitize())
	if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
		t.Fatalf("reading the state in schema %s: %v", schema, err)
	}
	return n
}
