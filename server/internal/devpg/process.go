package devpg

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// process is a started child and the outcome of waiting for it.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the child has exited and been reaped
	err  error         // what Wait returned; read only after done is closed
}

// launch starts cmd and reaps it in the background.
//
// On Linux the child gets SIGKILL when the thread that forked it exits
// (Pdeathsig), so that a crashed or killed Converge never leaves a server
// behind. The kernel ties that signal to the forking thread, not to the
// process, so the fork happens on a goroutine that holds its thread until
// the child is gone: no other goroutine can take over that thread and end it.
func launch(cmd *exec.Cmd) (*process, error) {
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// exited reports whether the child has already exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// childEnv is the environment for initdb and postgres: ours without the
// libpq variables (PGDATA, PGPORT, ...) that would override our flags, and
// with messages in English so startup failures can be recognised.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "LC_MESSAGES=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_MESSAGES=C")
}
