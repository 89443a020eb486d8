package e2e

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// startCmd starts cmd in a process group of its own, so it and anything it
// starts can be signalled together, and has the kernel SIGKILL it should
// the test process die first: a test binary that times out exits without
// running cleanups, and a worker left behind would redial forever.
//
// The kernel sends that signal when the thread that started the child
// exits, not the process (go.dev/issue/27505), and the Go runtime does end
// threads. So every child is started from one goroutine locked to its
// thread for the life of the test process.
func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive every child
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
