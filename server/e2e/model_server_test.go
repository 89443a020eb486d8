//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/testkit"
)

// tb is what the model's helpers need from a test: both *testing.T and
// *rapid.T have it, so one helper serves the random model and the fixed
// regression cases alike.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// modelTimings are the model's server timings: fast leases, like the
// harness's fast, and short retry backoffs, so a transient failure retries
// several times within one case and a shrinking run stays quick.
var modelTimings = timings{lease: 3 * time.Second, heartbeat: 500 * time.Millisecond, poll: 200 * time.Millisecond,
	retryBase: 50 * time.Millisecond, retryMax: 500 * time.Millisecond}

// mserver is a `converge serve` process for one model case. The harness's
// server is bound to a *testing.T and keeps every process until the test
// ends; a rapid case must own its server and end it with the case, so this
// one is started and killed by the case itself (see model_test.go).
type mserver struct {
	dbURL string
	tm    timings
	// maxBacklog is the server's admission bound per kind (0: off).
	maxBacklog int
	addr       string
	url        string
	api        *client.Client
	starts     int
	cmd        *exec.Cmd
	done       chan struct{}
	out        *testkit.Buffer // the output of every start, in order
	extra      []string        // more serve flags (a read replica's)
	// key is the server's secret key-encryption key, the same at every start.
	key string
}

func newModelServer(t tb, dbURL string, tm timings, addr string, maxBacklog int, extra ...string) *mserver {
	t.Helper()
	s := &mserver{dbURL: dbURL, tm: tm, maxBacklog: maxBacklog, addr: addr, url: "http://" + addr, out: &testkit.Buffer{}, extra: extra}
	// Admission refusals come back at once: the model applies them as
	// writes that changed nothing.
	s.api = client.New(s.url, client.WithBackpressure(0, nil))
	s.start(t)
	return s
}

// start runs the server on the same database and port and waits for it to
// be ready.
func (s *mserver) start(t tb) {
	t.Helper()
	s.starts++
	fmt.Fprintf(s.out, "---- converge serve #%d ----\n", s.starts)
	tm := s.tm
	args := append([]string{"serve", "--database-url", s.dbURL, "--listen", s.addr,
		"--lease", tm.lease.String(), "--heartbeat", tm.heartbeat.String(), "--poll", tm.poll.String(),
		"--retry-base", tm.retryBase.String(), "--retry-max", tm.retryMax.String(), "--log-level", "warn",
		"--max-backlog", strconv.Itoa(s.maxBacklog)}, s.extra...)
	s.cmd = exec.Command(bin.converge, args...)
	if s.key == "" {
		key, err := secret.NewKeyText()
		if err != nil {
			t.Fatalf("a secret key: %v", err)
		}
		s.key = key
	}
	s.cmd.Env = append(os.Environ(), secret.EnvVar+"="+s.key)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.WaitDelay = exitTimeout
	if err := startCmd(s.cmd); err != nil {
		t.Fatalf("start converge serve: %v", err)
	}
	done := make(chan struct{})
	s.done = done
	go func(c *exec.Cmd) { _ = c.Wait(); close(done) }(s.cmd)
	deadline := time.Now().Add(readyTimeout)
	for !s.isReady() {
		select {
		case <-done:
			t.Fatalf("converge serve #%d exited before it was ready:\n%s", s.starts, s.tail(40))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("converge serve #%d not ready after %s:\n%s", s.starts, readyTimeout, s.tail(40))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *mserver) isReady() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// kill SIGKILLs the server's process group, as a crash would, and reaps it.
func (s *mserver) kill(t tb) {
	t.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(exitTimeout):
		t.Fatalf("converge serve (pid %d) was not reaped %s after SIGKILL", s.cmd.Process.Pid, exitTimeout)
	}
}

// tail returns the last n lines the server printed, for failure reports.
func (s *mserver) tail(n int) string {
	lines := strings.Split(strings.TrimRight(s.out.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
