//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	runTimeout    = 10 * time.Minute // a block; the first builds the binaries
	outputTimeout = 2 * time.Minute  // a background process showing its output
	stopTimeout   = 30 * time.Second // a process draining after Ctrl-C
)

// TestGettingStarted runs the marked commands of docs/getting-started.md
// as written, in order, from the repository root, against the real server
// the page starts, and checks each marked output. The one liberty: the
// server is started with --listen on a free port (and CONVERGE_SERVER
// points every command at it), so the test can run beside a developer's
// own `converge dev` on the default port.
func TestGettingStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a real server, PostgreSQL and workers")
	}
	if dir := postgresBinaries(); dir == "" {
		t.Skip("skipped: no PostgreSQL server binaries (initdb) on PATH, under /usr/lib/postgresql/*/bin or in CONVERGE_PG_BIN; converge dev needs them")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseSteps(string(page))
	if err != nil {
		t.Fatalf("docs/getting-started.md: %v", err)
	}
	addr := freeAddr(t)
	env := commandEnv(root, addr)
	var last *stepResult
	for _, s := range steps {
		switch s.kind {
		case "run":
			last = runBlock(t, root, env, s)
		case "start":
			if s.name == "server" {
				s.body += " --listen " + addr
			}
			last = startBlock(t, root, env, s)
		case "output":
			if last == nil {
				t.Fatalf("docs/getting-started.md:%d: an output block before any command", s.line)
			}
			last.expect(t, s)
		}
	}
}

// stepResult is what a run block printed, or a background process's
// output so far.
type stepResult struct {
	step step
	out  func() string
	wait time.Duration // how long the output may take to appear
	done func() bool   // whether a background process has exited
}

func (r *stepResult) expect(t *testing.T, want step) {
	t.Helper()
	deadline := time.Now().Add(r.wait)
	for {
		err := matchOutput(want.body, r.out())
		if err == nil {
			return
		}
		if time.Now().After(deadline) || (r.done != nil && r.done()) {
			t.Fatalf("docs/getting-started.md:%d: the output of the block at line %d does not match the page: %v\n--- command\n%s\n--- output\n%s",
				want.line, r.step.line, err, r.step.body, r.out())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func runBlock(t *testing.T, root string, env []string, s step) *stepResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", s.body)
	cmd.Dir, cmd.Env = root, env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("docs/getting-started.md:%d: %v\n%s", s.line, err, s.body)
	case s.fails && err == nil:
		t.Fatalf("docs/getting-started.md:%d: the page says this fails, but it exited 0\n--- command\n%s\n--- output\n%s", s.line, s.body, out)
	case !s.fails && err != nil:
		t.Fatalf("docs/getting-started.md:%d: %v\n--- command\n%s\n--- output\n%s", s.line, err, s.body, out)
	}
	text := string(out)
	return &stepResult{step: s, out: func() string { return text }}
}

// startBlock starts a background command in its own process group, as a
// terminal would, and stops it at the end of the test with Ctrl-C's
// SIGINT, then SIGKILL if it has not drained in time.
func startBlock(t *testing.T, root string, env []string, s step) *stepResult {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+strings.TrimSpace(s.body))
	cmd.Dir, cmd.Env = root, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("docs/getting-started.md:%d: start %s: %v", s.line, s.name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Errorf("%s did not stop within %s of SIGINT; killed\n%s", s.name, stopTimeout, out.String())
		}
	})
	done := func() bool {
		select {
		case <-exited:
			return true
		default:
			return false
		}
	}
	return &stepResult{step: s, out: out.String, wait: outputTimeout, done: done}
}

// commandEnv is the test's environment with the page's PATH, the server's
// address, and no other CONVERGE_* setting that could point elsewhere.
func commandEnv(root, addr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+kv[len("PATH="):])
		case strings.HasPrefix(kv, "CONVERGE_") && !strings.HasPrefix(kv, "CONVERGE_PG_BIN="):
		default:
			env = append(env, kv)
		}
	}
	return append(env, "CONVERGE_SERVER=http://"+addr)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// postgresBinaries finds initdb where converge dev looks for it.
func postgresBinaries() string {
	if dir := os.Getenv("CONVERGE_PG_BIN"); dir != "" {
		return dir
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Dir(dirs[len(dirs)-1])
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
