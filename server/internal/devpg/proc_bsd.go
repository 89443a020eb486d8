//go:build unix && !linux

package devpg

import (
	"syscall"
	"time"
)

// sysProcAttr has no parent-death signal outside Linux: a Converge process
// that dies without calling Stop leaves its server running, and the next
// Start's sweep skips the directory until that server is stopped by hand.
func sysProcAttr(o *owner) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: credential(o), Setpgid: true}
}

// childPIDs cannot list children without /proc; killTree then kills the
// postmaster only and its backends exit when they notice.
func childPIDs(int) []int { return nil }

func waitGone([]int, time.Duration) {}

func isZombie(int) bool { return false }
