//go:build !linux

package helm_test

import "syscall"

// childProcAttr: only Linux can tie a child's life to its parent's; elsewhere the test's
// cleanup stops the servers, and a test killed by its -timeout can leave them running.
func childProcAttr() *syscall.SysProcAttr { return nil }
