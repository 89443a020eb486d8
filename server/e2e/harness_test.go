//go:build unix

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/secret"
)

// timings are the server's lease and scheduling durations.
type timings struct {
	lease, heartbeat, poll, retryBase, retryMax time.Duration
}

// fast makes a dead worker's tasks run again within seconds.
var fast = timings{lease: 3 * time.Second, heartbeat: 500 * time.Millisecond, poll: 200 * time.Millisecond,
	retryBase: 100 * time.Millisecond, retryMax: time.Second}

// readyTimeout bounds how long a server may take to answer /readyz.
const readyTimeout = 30 * time.Second

// server is a `converge serve` process that can be killed and started
// again on the same database and port.
type server struct {
	t      *testing.T
	dbURL  string
	timing timings
	addr   string // host:port, fixed across restarts
	url    string // http://addr
	starts int
	proc   *proc
	api    *client.Client
	// env is added to the server process's environment, args to its
	// command line.
	env  []string
	args []string
}

// startServer runs `converge serve` (all roles) against dbURL on a free
// port and returns once it is ready.
func startServer(t *testing.T, dbURL string, timing timings) *server {
	t.Helper()
	return startServerEnv(t, dbURL, timing, nil)
}

// startServerEnv is startServer with env added to the server's
// environment and args to its command line, on every (re)start. Without
// a secret key in env the server gets a fresh one.
func startServerEnv(t *testing.T, dbURL string, timing timings, env []string, args ...string) *server {
	t.Helper()
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, secret.EnvVar+"=") }) {
		// Every server has a secret key, as production servers should, so
		// kinds with secret properties (the model's) apply.
		key, err := secret.NewKeyText()
		if err != nil {
			t.Fatal(err)
		}
		env = append(slices.Clip(env), secret.EnvVar+"="+key)
	}
	s := &server{t: t, dbURL: dbURL, timing: timing, addr: freeAddr(t), env: env, args: args}
	s.url = "http://" + s.addr
	s.api = client.New(s.url)
	s.start()
	return s
}

// start (re)starts the server process and waits until it is ready.
func (s *server) start() {
	s.t.Helper()
	s.starts++
	tm := s.timing
	s.proc = startProcEnv(s.t, fmt.Sprintf("converge serve #%d", s.starts), s.env, bin.converge, append([]string{"serve",
		"--database-url", s.dbURL, "--listen", s.addr,
		"--lease", tm.lease.String(), "--heartbeat", tm.heartbeat.String(), "--poll", tm.poll.String(),
		"--retry-base", tm.retryBase.String(), "--retry-max", tm.retryMax.String()}, s.args...)...)
	s.waitReady()
}

// kill SIGKILLs the server, as a crash would.
func (s *server) kill() {
	s.t.Helper()
	s.proc.kill(s.t)
}

// waitReady polls /readyz until it answers 200.
func (s *server) waitReady() {
	s.t.Helper()
	deadline := time.Now().Add(readyTimeout)
	var last string
	for {
		if s.proc.exited() {
			s.t.Fatalf("%s exited before it was ready", s.proc.name)
		}
		ok, why := s.ready()
		if ok {
			return
		}
		last = why
		if time.Now().After(deadline) {
			s.t.Fatalf("%s not ready after %s: last /readyz: %s", s.proc.name, readyTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ready reports whether /readyz answers 200, and otherwise what it said.
func (s *server) ready() (bool, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/readyz", nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return addr
}

// startLeaf runs the leaf example worker against s with extra flags.
func startLeaf(t *testing.T, s *server, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, bin.leaf, append([]string{"-server", s.url}, args...)...)
}

// startNoop runs the noop example worker against s with extra flags.
func startNoop(t *testing.T, s *server, name string, args ...string) *proc {
	t.Helper()
	return startProc(t, name, bin.noop, append([]string{"-server", s.url}, args...)...)
}

// ctlResult is what one conctl run printed and how it exited.
type ctlResult struct {
	args   []string
	stdout string
	stderr string
	code   int
}

// all is everything conctl printed, for searching.
func (r ctlResult) all() string { return r.stdout + r.stderr }

func (r ctlResult) String() string {
	return fmt.Sprintf("conctl %s: exit %d\nstdout:\n%sstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// ctlTimeout bounds one conctl run.
const ctlTimeout = time.Minute

// conctl runs conctl against s with stdin and args and returns what it did;
// it fails the test only if conctl could not be run at all.
func conctl(t *testing.T, s *server, stdin string, args ...string) ctlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlTimeout)
	defer cancel()
	full := append([]string{"--server", s.url}, args...)
	cmd := exec.CommandContext(ctx, bin.conctl, full...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := ctlResult{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("conctl %s did not finish within %s\n%s", strings.Join(args, " "), ctlTimeout, res)
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run conctl %s: %v", strings.Join(args, " "), err)
	}
	return res
}
