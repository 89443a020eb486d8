package devpg

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// aptPackage is the Debian and Ubuntu package that holds the server
// binaries, in the distribution's supported major version.
const aptPackage = "postgresql"

// FindOrInstall returns the directory holding initdb and postgres, found
// as Start finds them. When there are none, the process runs as root and
// the system has apt-get (Debian, Ubuntu), it installs the postgresql
// package first, saying so on log (nil discards that), so a fresh machine
// needs no manual step. Otherwise the error wraps ErrNoBinaries and names
// what to install on each platform. ctx bounds the install.
func FindOrInstall(ctx context.Context, log io.Writer) (string, error) {
	return installer{
		log:      log,
		run:      runCommand,
		isRoot:   func() bool { return os.Geteuid() == 0 },
		lookPath: exec.LookPath,
	}.findOrInstall(ctx)
}

// installer holds what FindOrInstall does to the machine, so tests can
// check the commands without running apt-get.
type installer struct {
	log io.Writer
	// run runs name with args, env added to this process's environment,
	// and returns the tail of its combined output.
	run      func(ctx context.Context, env []string, name string, args ...string) (string, error)
	isRoot   func() bool
	lookPath func(file string) (string, error)
}

func (in installer) findOrInstall(ctx context.Context) (string, error) {
	dir, err := findBinaries()
	if err == nil {
		return dir, nil
	}
	if os.Getenv(binEnv) != "" {
		// The user chose a directory, hence a version; installing the
		// distribution's would not give them that one.
		return "", err
	}
	if !in.isRoot() {
		return "", fmt.Errorf("%w (run as root on Debian or Ubuntu, Converge installs them itself)", err)
	}
	apt, lookErr := in.lookPath("apt-get")
	if lookErr != nil {
		return "", fmt.Errorf("%w (there is no apt-get here for Converge to install them with)", err)
	}
	in.say("PostgreSQL server binaries not found; installing the %s package with apt-get (a minute or two)...", aptPackage)
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", aptPackage}} {
		out, runErr := in.run(ctx, []string{"DEBIAN_FRONTEND=noninteractive"}, apt, args...)
		if runErr != nil {
			failed := fmt.Errorf("%w; installing them failed: apt-get %s: %v", err, strings.Join(args, " "), runErr)
			if out = strings.TrimSpace(out); out != "" {
				failed = fmt.Errorf("%w; its output ends:\n%s", failed, out)
			}
			return "", failed
		}
	}
	dir, err = findBinaries()
	if err != nil {
		return "", fmt.Errorf("%w (apt-get installed %s, yet initdb and postgres are not where they were looked for)", err, aptPackage)
	}
	in.say("installed PostgreSQL server binaries in %s", dir)
	return dir, nil
}

func (in installer) say(format string, args ...any) {
	if in.log != nil {
		fmt.Fprintf(in.log, format+"\n", args...)
	}
}

// aptWaitDelay bounds how long an interrupted command may take to exit
// before it is killed.
const aptWaitDelay = 30 * time.Second

func runCommand(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// apt-get killed outright can leave dpkg's state half-written; on
	// cancellation it gets an interrupt first, as Ctrl-C would send it.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = aptWaitDelay
	err := cmd.Run()
	return out.String(), err
}
