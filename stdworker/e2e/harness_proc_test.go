//go:build unix

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// exitTimeout bounds how long a process may take to exit once told to.
const exitTimeout = 15 * time.Second

// proc is a binary running in a process group of its own. It is stopped when
// its test ends (SIGTERM first if stopSignal, then SIGKILL to the group), and
// its output goes to the test log if the test failed.
type proc struct {
	name       string
	cmd        *exec.Cmd
	out        *syncBuffer
	done       chan struct{} // closed once reaped
	err        error         // Wait's result; read after done
	stopSignal bool
}

// startProc starts path with args; name labels it in the test log.
func startProc(t *testing.T, name, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.WaitDelay = exitTimeout // a stray grandchild holding the pipe must not hang Wait
	if err := startCmd(p.cmd); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.stopSignal && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(exitTimeout):
			}
		}
		p.kill(t)
		if t.Failed() {
			t.Logf("---- output of %s ----\n%s---- end of %s ----", name, p.output(), name)
		}
	})
	return p
}

// signal sends sig to the process (not its group: stdworker must pass it on
// itself).
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, syscall.ESRCH) && !p.exited() {
		t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// kill SIGKILLs the process group and reaps the process.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		t.Errorf("%s (pid %d) not reaped %s after SIGKILL", p.name, p.cmd.Process.Pid, exitTimeout)
	}
}

// wait waits up to timeout for the process to exit and returns its exit
// code (-1 for a signal).
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %s\n%s", p.name, timeout, p.output())
	}
	var exit *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &exit):
		return exit.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

// waitOutput waits until the process's output contains s.
func (p *proc) waitOutput(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q within %s; it printed:\n%s", p.name, s, timeout, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string { return p.out.String() }

// cmdResult is what one run of a command printed and how it exited.
type cmdResult struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r cmdResult) String() string {
	return fmt.Sprintf("%s: exit %d\nstdout:\n%sstderr:\n%s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runTimeout bounds one run of a command.
const runTimeout = time.Minute

// run runs path with args and stdin to completion; it fails the test only
// if the command could not run or did not finish.
func run(t *testing.T, stdin, path string, args ...string) cmdResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cmdResult{args: append([]string{path}, args...), stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("did not finish within %s: %s", runTimeout, res)
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", path, err)
	}
	return res
}

// startCmd starts cmd in a process group of its own, and has the kernel
// SIGKILL it should the test binary die first (a timed-out test binary runs
// no cleanups). The kernel sends that signal when the starting thread
// exits, so every child is started from one goroutine locked to its thread
// for the life of the test binary.
func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked
			for r := range spawner.reqs {
				r.err <- r.cmd.Start()
			}
		}()
	})
	r := spawnRequest{cmd: cmd, err: make(chan error, 1)}
	spawner.reqs <- r
	return <-r.err
}

var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd *exec.Cmd
	err chan error
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
