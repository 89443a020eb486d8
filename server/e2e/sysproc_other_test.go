//go:build unix && !linux

package e2e

import (
	"os/exec"
	"syscall"
)

// startCmd starts cmd in a process group of its own, so it and anything it
// starts can be signalled together.
func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}
