package helm_test

import "syscall"

// childProcAttr makes a server the test starts die with the test binary, so a test killed by
// its -timeout (which skips cleanups) leaves no etcd or kube-apiserver behind.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
