//go:build !unix

package devpg

import (
	"errors"
	"syscall"
)

type owner struct{}

func serverOwner() (*owner, error) {
	return nil, errors.New("devpg: starting PostgreSQL is supported on Linux and macOS only; " +
		"point Converge at an existing database with --database-url")
}

func chown(string, *owner) error { return nil }

func sysProcAttr(*owner) *syscall.SysProcAttr { return nil }

func processAlive(int) bool { return true }

func killTree(p *process) { _ = p.cmd.Process.Kill() }
