//go:build unix

package devpg

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// owner is the OS account that runs initdb and postgres when it differs
// from ours.
type owner struct {
	uid, gid uint32
}

// serverOwner returns the account to run PostgreSQL as: nil (ourselves)
// unless we are root, which PostgreSQL refuses to run as; then the
// "postgres" user.
func serverOwner() (*owner, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := lookupUser("postgres")
	if err != nil {
		return nil, fmt.Errorf("devpg: running as root, so PostgreSQL must run as the OS user "+
			"\"postgres\", but looking it up failed (%w); create that user (it comes with the "+
			"postgresql package) or run as a non-root user", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("devpg: OS user \"postgres\": uid %q is not numeric", u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("devpg: OS user \"postgres\": gid %q is not numeric", u.Gid)
	}
	return &owner{uid: uint32(uid), gid: uint32(gid)}, nil
}

// lookupUser finds an OS account; tests replace it.
var lookupUser = user.Lookup

// chown hands path to the server's account, if it has its own.
func chown(path string, o *owner) error {
	if o == nil {
		return nil
	}
	if err := os.Chown(path, int(o.uid), int(o.gid)); err != nil {
		return fmt.Errorf("devpg: chown %s to the postgres user: %w", path, err)
	}
	return nil
}

func credential(o *owner) *syscall.Credential {
	if o == nil {
		return nil
	}
	return &syscall.Credential{Uid: o.uid, Gid: o.gid}
}

// processAlive reports whether pid names a running process, ours or
// anyone's. A zombie is not running: where no init reaps orphans, a dead
// server would otherwise look alive forever.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return (err == nil || errors.Is(err, syscall.EPERM)) && !isZombie(pid)
}

// killTree SIGKILLs the postmaster and its backends, as a machine crash
// would. Killing the postmaster alone leaves backends running that still
// hold its shared memory, and a new postmaster refuses to start until
// they are gone. The postmaster is stopped first so it cannot fork a
// backend that the sweep misses.
func killTree(p *process) {
	// os.Process.Signal refuses a reaped child, whose pid may be reused.
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return
	}
	children := childPIDs(p.cmd.Process.Pid)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	_ = p.cmd.Process.Kill()
	waitGone(children, 5*time.Second)
}
