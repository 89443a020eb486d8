//go:build unix

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runExample runs an example's run.sh with the binaries under test on a
// free port, in a process group of its own, and fails the test unless it
// exits 0 having stopped everything it started.
func runExample(t *testing.T, script string) cmdResult {
	t.Helper()
	path := repoPath(t, script)
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), "CONVERGE_BIN_DIR="+bin.dir, "LISTEN="+freeAddr(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = exitTimeout
	if err := startCmd(cmd); err != nil {
		t.Fatalf("start %s: %v", script, err)
	}
	pgid := cmd.Process.Pid
	defer syscall.Kill(-pgid, syscall.SIGKILL)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		t.Fatalf("%s did not finish within 3 minutes\nstdout:\n%s\nstderr:\n%s", script, &stdout, &stderr)
	}
	res := cmdResult{args: []string{script}, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		res.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	if res.code != 0 {
		t.Fatalf("%s", res)
	}
	// Everything run.sh started was in its group: none may outlive it.
	deadline := time.Now().Add(exitTimeout)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Errorf("%s exited but left processes running in its group:\n%s", script, groupMembers(pgid))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return res
}

// groupMembers lists the processes of a process group, from ps.
func groupMembers(pgid int) string {
	out, _ := exec.Command("ps", "-eo", "pid=,pgid=,args=").Output()
	var b strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == strconv.Itoa(pgid) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	waitFileE2E(t, file)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("pid file %s: %v", file, err)
	}
	return pid
}

// waitFileE2E waits until a program has written file (a line).
func waitFileE2E(t *testing.T, file string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if raw, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(raw), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not written within a minute", file)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitGone waits until pid has stopped running (gone, or a zombie awaiting
// its reaper).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil && syscall.Kill(pid, 0) != nil {
			return
		}
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs: it should have been killed with its group", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
