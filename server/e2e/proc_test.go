//go:build unix

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/testkit"
)

// exitTimeout bounds how long a killed process may take to be reaped.
const exitTimeout = 10 * time.Second

// proc is a binary running as a subprocess in a process group of its own.
// It is killed when its test ends, and its output goes to the test log if
// the test failed.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testkit.Buffer
	done chan struct{} // closed once the process has been reaped
	err  error         // what Wait returned; read after done
}

// startProc starts path with args. name labels its output in the test log.
func startProc(t *testing.T, name, path string, args ...string) *proc {
	t.Helper()
	return startProcEnv(t, name, nil, path, args...)
}

// startProcEnv is startProc with env added to the test's environment.
func startProcEnv(t *testing.T, name string, env []string, path string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: &testkit.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// A stray grandchild holding the output pipe must not hang Wait.
	p.cmd.WaitDelay = exitTimeout
	if err := startCmd(p.cmd); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			t.Logf("---- output of %s (%s) ----\n%s---- end of %s ----", name, strings.Join(p.cmd.Args, " "), p.output(), name)
		}
	})
	return p
}

// signal sends sig to the process's group.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// kill SIGKILLs the process group and reaps the process. Killing an exited
// process does nothing.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if !p.exited() {
		p.signal(t, syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(exitTimeout):
		t.Errorf("%s (pid %d) was not reaped %s after SIGKILL", p.name, p.cmd.Process.Pid, exitTimeout)
	}
}

// wait waits up to timeout for the process to exit and returns its exit
// code; a process ended by a signal reports -1.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %s", p.name, timeout)
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

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *proc) output() string { return p.out.String() }
