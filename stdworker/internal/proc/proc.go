//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// Defaults for the Spec fields left zero.
const (
	DefaultMaxStdout  = 1 << 20
	DefaultStderrTail = 4 << 10
	DefaultKillGrace  = 5 * time.Second
)

// pipeDrain bounds how long Run waits for the output pipes to close once the
// process group is gone: only a descendant that left the group (setsid) can
// still hold them.
const pipeDrain = 2 * time.Second

// ExitTerminal is the exit code by which a program reports a terminal
// failure.
const ExitTerminal = 2

// Spec says what to run and how.
type Spec struct {
	// Path is the program: a path, or a name looked up on PATH.
	Path string
	// Name is the program's name in messages; empty means Path.
	Name string
	// Args are the arguments after the program's name.
	Args []string
	// Env is the program's whole environment ("KEY=value"); nil means the
	// environment of this process.
	Env []string
	// Dir is the working directory; empty means this process's.
	Dir string
	// Stdin is written to the program's standard input, which is then
	// closed.
	Stdin []byte
	// Timeout bounds the run on top of ctx; zero means no bound but ctx.
	Timeout time.Duration
	// KillGrace is how long the process group has between SIGTERM and
	// SIGKILL; zero means DefaultKillGrace.
	KillGrace time.Duration
	// MaxStdout is how much stdout is kept, in bytes; zero means
	// DefaultMaxStdout. Printing more is a terminal failure unless
	// StdoutTail is set.
	MaxStdout int
	// StdoutTail keeps the last MaxStdout bytes of stdout instead of
	// failing when the program prints more.
	StdoutTail bool
	// StderrTail is how many trailing bytes of stderr are kept; zero means
	// DefaultStderrTail.
	StderrTail int
}

// Result is what a program that ran did.
type Result struct {
	// Stdout is what it printed on stdout (the tail, with Spec.StdoutTail).
	Stdout []byte
	// StdoutTruncated reports that Stdout lost its beginning (StdoutTail).
	StdoutTruncated bool
	// StderrTail is the end of what it printed on stderr.
	StderrTail string
	// ExitCode is its exit status; 128+n when signal n ended it.
	ExitCode int
	// Duration is how long it ran.
	Duration time.Duration
}

// ExitError reports a program that exited with a code other than 0 or was
// killed. It is wrapped with converge.Terminal for ExitTerminal.
type ExitError struct {
	// Program is Spec.Name, or Spec.Path.
	Program string
	// Code is the exit status, 128+n for signal n.
	Code int
	// Signal is the signal that ended it, if one did.
	Signal syscall.Signal
	// Reason says why stdworker killed it ("timed out after 5s"), if it did.
	Reason string
	// StderrTail is the end of its stderr.
	StderrTail string
}

func (e *ExitError) Error() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "program %q ", e.Program)
	switch {
	case e.Reason != "":
		fmt.Fprintf(&b, "%s and was killed (exit code %d)", e.Reason, e.Code)
	case e.Signal != 0:
		fmt.Fprintf(&b, "was killed by %s (exit code %d)", signalName(e.Signal), e.Code)
	default:
		fmt.Fprintf(&b, "exited with code %d", e.Code)
	}
	if e.StderrTail != "" {
		fmt.Fprintf(&b, "; stderr: %s", bytes.TrimSpace([]byte(e.StderrTail)))
	}
	return b.String()
}

// Run runs the program described by spec; see the package documentation for
// what it promises. It never panics and returns a nil Result only when the
// program could not be started.
func Run(ctx context.Context, spec Spec) (*Result, error) {
	spec = withDefaults(spec)
	if spec.Path == "" {
		return nil, converge.Terminal(errors.New("proc: no program to run"))
	}
	if spec.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, spec.Timeout, errTimeout)
		defer cancel()
	}
	r, err := start(spec)
	if err != nil {
		return nil, err
	}
	return r.wait(ctx, spec)
}

// errTimeout is the cause of a run's context ending at Spec.Timeout.
var errTimeout = errors.New("timeout")

func withDefaults(s Spec) Spec {
	if s.Name == "" {
		s.Name = s.Path
	}
	if s.KillGrace <= 0 {
		s.KillGrace = DefaultKillGrace
	}
	if s.MaxStdout <= 0 {
		s.MaxStdout = DefaultMaxStdout
	}
	if s.StderrTail <= 0 {
		s.StderrTail = DefaultStderrTail
	}
	return s
}

// running is a started program and the goroutines reading its output.
type running struct {
	cmd      *exec.Cmd
	began    time.Time
	exited   chan error // cmd.Wait's result
	stdout   *capWriter
	stderr   *tailBuffer
	overflow chan struct{} // closed when stdout passes its cap
	readers  chan struct{} // closed once both readers have finished
	pipes    []*os.File    // the parent's read ends
}

func start(spec Spec) (*running, error) {
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, startError(spec.Name, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("program %q: stdout pipe: %w", spec.Name, err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("program %q: stderr pipe: %w", spec.Name, err)
	}
	cmd := exec.Command(path, spec.Args...)
	cmd.Args[0] = spec.Path
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	cmd.Stdin = bytes.NewReader(spec.Stdin)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = sysProcAttr()
	// A descendant that keeps stdin open without reading it must not hold
	// up Wait once the program has exited.
	cmd.WaitDelay = pipeDrain
	err = cmd.Start()
	closeAll(outW, errW) // the child holds its own copies
	if err != nil {
		closeAll(outR, errR)
		return nil, startError(spec.Name, err)
	}
	r := &running{
		cmd: cmd, began: time.Now(), exited: make(chan error, 1),
		stderr:   newTailBuffer(spec.StderrTail),
		overflow: make(chan struct{}),
		readers:  make(chan struct{}),
		pipes:    []*os.File{outR, errR},
	}
	r.stdout = &capWriter{max: spec.MaxStdout, tail: spec.StdoutTail, overflow: r.overflow}
	go func() { r.exited <- cmd.Wait() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(r.stdout, outR); done <- struct{}{} }()
	go func() { _, _ = io.Copy(r.stderr, errR); done <- struct{}{} }()
	go func() { <-done; <-done; close(r.readers) }()
	return r, nil
}

// startError classifies a failure to start: a missing or unusable program is
// terminal.
func startError(program string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
		return converge.Terminal(fmt.Errorf("program %q not found: %w", program, err))
	}
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
		return converge.Terminal(fmt.Errorf("program %q cannot be run: %w", program, err))
	}
	return fmt.Errorf("program %q: start: %w", program, err)
}

// wait waits for the program to exit, killing its group when ctx ends or
// stdout overflows, and classifies the outcome.
func (r *running) wait(ctx context.Context, spec Spec) (*Result, error) {
	var reason string
	var waitErr error
	select {
	case waitErr = <-r.exited:
	case <-ctx.Done():
		reason = "was stopped"
		if errors.Is(context.Cause(ctx), errTimeout) {
			reason = fmt.Sprintf("timed out after %s", spec.Timeout)
		} else if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = "passed the task deadline"
		}
		waitErr = r.stop(spec.KillGrace)
	case <-r.overflow:
		reason = "overflow"
		waitErr = r.stop(spec.KillGrace)
	}
	r.killGroup(syscall.SIGKILL) // whatever the program left behind
	r.drainPipes()

	res := &Result{
		Stdout:          r.stdout.bytes(),
		StdoutTruncated: r.stdout.truncated,
		StderrTail:      r.stderr.String(),
		ExitCode:        exitCode(r.cmd.ProcessState, waitErr),
		Duration:        time.Since(r.began),
	}
	switch {
	case reason == "overflow":
		return res, converge.Terminal(fmt.Errorf("program %q: output exceeds %s on stdout; it was killed",
			spec.Name, byteSize(spec.MaxStdout)))
	case reason != "":
		err := r.exitError(spec, res, reason)
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errTimeout) {
			return res, fmt.Errorf("%w: %w", err, ctx.Err())
		}
		return res, err
	case res.ExitCode == 0:
		return res, nil
	case res.ExitCode == ExitTerminal:
		return res, converge.Terminal(r.exitError(spec, res, ""))
	}
	return res, r.exitError(spec, res, "")
}

func (r *running) exitError(spec Spec, res *Result, reason string) *ExitError {
	e := &ExitError{Program: spec.Name, Code: res.ExitCode, Reason: reason, StderrTail: res.StderrTail}
	if ps := r.cmd.ProcessState; ps != nil {
		if st, ok := ps.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			e.Signal = st.Signal()
		}
	}
	return e
}

// stop sends SIGTERM to the process group, then SIGKILL if the program has
// not exited within grace, and returns cmd.Wait's result.
func (r *running) stop(grace time.Duration) error {
	r.killGroup(syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-r.exited:
		return err
	case <-timer.C:
	}
	r.killGroup(syscall.SIGKILL)
	return <-r.exited
}

// killGroup signals the program's process group. The group outlives its
// leader while any member lives, so this reaches grandchildren after the
// program itself has exited.
func (r *running) killGroup(sig syscall.Signal) {
	_ = syscall.Kill(-r.cmd.Process.Pid, sig)
}

// drainPipes waits for the output readers to reach end of file, and closes
// the pipes if something outside the group still holds them open.
func (r *running) drainPipes() {
	timer := time.NewTimer(pipeDrain)
	defer timer.Stop()
	select {
	case <-r.readers:
	case <-timer.C:
	}
	closeAll(r.pipes...)
	<-r.readers
}

// exitCode reads the exit status from the process state, which Wait sets
// even when it also reports an I/O error (a descendant holding a pipe past
// WaitDelay); without one the status is unknown: -1.
func exitCode(ps *os.ProcessState, waitErr error) int {
	if ps == nil {
		if waitErr == nil {
			return 0
		}
		return -1
	}
	if st, ok := ps.Sys().(syscall.WaitStatus); ok && st.Signaled() {
		return 128 + int(st.Signal())
	}
	return ps.ExitCode()
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	}
	return fmt.Sprintf("signal %d (%s)", int(s), s)
}

func byteSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
