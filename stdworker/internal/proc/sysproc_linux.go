package proc

import "syscall"

// sysProcAttr puts the program in a process group of its own, so the whole
// group can be signalled, and has the kernel SIGKILL it should stdworker die
// first: its task will run again elsewhere, and must not also run here.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
