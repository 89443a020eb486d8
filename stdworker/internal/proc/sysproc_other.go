//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr puts the program in a process group of its own, so the whole
// group can be signalled.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
