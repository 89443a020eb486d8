package devpg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// portAttempts bounds how often Start picks another free port when the one
// it picked was taken before postgres could bind it.
const portAttempts = 5

// errPortBusy marks a server that exited because its port was in use.
var errPortBusy = errors.New("port in use")

// startServer starts postgres on port (0: a free one) and waits until it
// accepts connections. c.mu must be held.
func (c *Cluster) startServer(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.startTimeout())
	defer cancel()
	for attempt := 1; ; attempt++ {
		try := port
		if try == 0 {
			var err error
			if try, err = freePort(); err != nil {
				return fmt.Errorf("devpg: pick a free port: %w", err)
			}
		}
		err := c.startOn(ctx, try)
		if err == nil {
			return nil
		}
		if port != 0 || attempt == portAttempts || !errors.Is(err, errPortBusy) {
			return err
		}
	}
}

// startOn launches postgres on port and waits for it; on failure the
// server is gone when it returns.
func (c *Cluster) startOn(ctx context.Context, port int) error {
	p, err := c.launchServer(port)
	if err != nil {
		return err
	}
	c.port = port
	err = writePidFile(c.dir, os.Getpid(), p.cmd.Process.Pid)
	if err == nil {
		err = c.waitReady(ctx, p)
	}
	if err != nil {
		if !p.exited() {
			killTree(p)
			<-p.done
		}
		return err
	}
	c.proc = p
	return nil
}

func (c *Cluster) launchServer(port int) (*process, error) {
	args := []string{"-D", c.dataDir(), "-p", strconv.Itoa(port), "-k", c.dir}
	for _, kv := range c.opts.serverSettings() {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), args...)
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = sysProcAttr(c.owner)
	// Backends inherit the output pipe when Options.Log is set; do not let
	// one that outlives a killed postmaster hold up Wait for long.
	cmd.WaitDelay = 5 * time.Second
	out, err := c.openLog()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = out, out
	p, err := launch(cmd)
	if f, ok := out.(*os.File); ok {
		_ = f.Close() // the child has its own copy
	}
	if err != nil {
		return nil, fmt.Errorf("devpg: start postgres: %w", err)
	}
	return p, nil
}

// openLog returns where the next server's output goes and remembers
// where that output starts, for error messages.
func (c *Cluster) openLog() (io.Writer, error) {
	if c.opts.Log != nil {
		c.tail.Reset()
		return io.MultiWriter(c.opts.Log, &c.tail), nil
	}
	f, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devpg: open server log: %w", err)
	}
	if c.logOffset, err = f.Seek(0, io.SeekEnd); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("devpg: open server log: %w", err)
	}
	if err := chown(c.logPath, c.owner); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// serverOutput returns the current server's recent output.
func (c *Cluster) serverOutput() string {
	if c.opts.Log != nil {
		return c.tail.String()
	}
	return readTail(c.logPath, c.logOffset)
}

// waitReady polls until the server accepts a connection, the server
// exits, or ctx ends.
func (c *Cluster) waitReady(ctx context.Context, p *process) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		err := c.answers(attempt)
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-p.done:
			return c.exitError(p)
		case <-ctx.Done():
			return fmt.Errorf("devpg: postgres not accepting connections on port %d after %s (%w); "+
				"last error: %v; server output ends with:\n%s",
				c.port, c.opts.startTimeout(), ctx.Err(), lastErr, c.serverOutput())
		case <-tick.C:
		}
	}
}

// answers checks that this cluster's server, and no other, answers on
// c.port. Between picking a free port and binding it, another cluster may
// take the port; until our server gives up, that one would answer.
func (c *Cluster) answers(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, urlFor(c.port, "postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return err
	}
	theirs, err1 := os.Stat(dir)
	ours, err2 := os.Stat(c.dataDir())
	if err1 != nil || err2 != nil || !os.SameFile(theirs, ours) {
		return fmt.Errorf("port %d is served by another cluster (data directory %s)", c.port, dir)
	}
	return nil
}

func (c *Cluster) exitError(p *process) error {
	out := c.serverOutput()
	err := fmt.Errorf("devpg: postgres exited during startup (%v); server output ends with:\n%s", p.err, out)
	if strings.Contains(out, "could not bind") || strings.Contains(out, "Address already in use") {
		return fmt.Errorf("%w (%w on port %d)", err, errPortBusy, c.port)
	}
	return err
}

// shutdown stops the running server, if any, with a fast shutdown,
// escalating to SIGKILL after stopTimeout. c.mu must be held.
func (c *Cluster) shutdown() error {
	p := c.proc
	if p == nil {
		return nil
	}
	c.proc = nil
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil && !p.exited() {
		killTree(p)
	}
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return nil
	case <-timer.C:
		killTree(p)
		<-p.done
		return fmt.Errorf("devpg: postgres did not finish a fast shutdown within %s; killed it", stopTimeout)
	}
}

// freePort asks the kernel for a free port. Another process may take it
// before postgres binds it; startServer then tries another. Tests replace it.
var freePort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("listener address %v is not TCP", l.Addr())
	}
	return addr.Port, nil
}
