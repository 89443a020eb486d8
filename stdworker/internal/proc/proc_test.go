//go:build unix

package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// sh runs script with /bin/sh.
func sh(script string) Spec {
	return Spec{Path: "/bin/sh", Args: []string{"-c", script}}
}

func TestSuccessReadsStdinAndStdout(t *testing.T) {
	spec := sh(`cat; echo " and more"; echo oops >&2`)
	spec.Stdin = []byte(`{"hello":1}`)
	res, err := Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := string(res.Stdout), "{\"hello\":1} and more\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if res.StderrTail != "oops\n" || res.ExitCode != 0 {
		t.Errorf("stderr tail %q, exit %d; want \"oops\\n\", 0", res.StderrTail, res.ExitCode)
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		script   string
		code     int
		terminal bool
		message  []string
	}{
		{"exit 2 is terminal", `echo "bad spec: replicas" >&2; exit 2`, 2, true,
			[]string{"exited with code 2", "stderr: bad spec: replicas"}},
		{"exit 1 is transient", `echo "try later" >&2; exit 1`, 1, false,
			[]string{"exited with code 1", "try later"}},
		{"exit 137 is transient", `exit 137`, 137, false, []string{"exited with code 137"}},
		{"SIGKILL is transient", `echo dying >&2; kill -KILL $$`, 137, false,
			[]string{"killed by SIGKILL (exit code 137)", "dying"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(t.Context(), sh(tc.script))
			if err == nil {
				t.Fatal("Run succeeded; want an error")
			}
			if res == nil || res.ExitCode != tc.code {
				t.Fatalf("result %+v; want exit code %d", res, tc.code)
			}
			if converge.IsTerminal(err) != tc.terminal {
				t.Errorf("terminal = %v, want %v: %v", converge.IsTerminal(err), tc.terminal, err)
			}
			var exit *ExitError
			if !errors.As(err, &exit) || exit.Code != tc.code {
				t.Errorf("error %v is not an *ExitError with code %d", err, tc.code)
			}
			for _, m := range tc.message {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not contain %q", err, m)
				}
			}
		})
	}
}

func TestStderrTailKeepsTheEnd(t *testing.T) {
	spec := sh(`i=0; while [ $i -lt 2000 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 3`)
	spec.StderrTail = 64
	res, err := Run(t.Context(), spec)
	if err == nil {
		t.Fatal("Run succeeded; want exit 3")
	}
	if len(res.StderrTail) > 64 || !strings.HasSuffix(res.StderrTail, "line 1999\n") {
		t.Errorf("stderr tail %q: want at most 64 bytes ending in line 1999", res.StderrTail)
	}
	if strings.Contains(err.Error(), "line 0\n") {
		t.Errorf("error %q carries the head of stderr, not its tail", err)
	}
}

func TestTooMuchOutputIsTerminal(t *testing.T) {
	res, err := Run(t.Context(), sh(`head -c 3000000 /dev/zero; sleep 30`))
	if err == nil || !converge.IsTerminal(err) {
		t.Fatalf("Run: %v; want a terminal error", err)
	}
	if !strings.Contains(err.Error(), "output exceeds 1 MiB") {
		t.Errorf("error %q does not say the output exceeds 1 MiB", err)
	}
	if len(res.Stdout) != DefaultMaxStdout {
		t.Errorf("kept %d bytes of stdout, want %d", len(res.Stdout), DefaultMaxStdout)
	}
	if res.Duration > 20*time.Second {
		t.Errorf("took %s: the program was not killed when it overflowed", res.Duration)
	}
}

func TestStdoutTailKeepsTheEnd(t *testing.T) {
	spec := sh(`i=0; while [ $i -lt 500 ]; do echo "out $i"; i=$((i+1)); done`)
	spec.MaxStdout, spec.StdoutTail = 32, true
	res, err := Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !res.StdoutTruncated || len(res.Stdout) != 32 || !strings.HasSuffix(string(res.Stdout), "out 499\n") {
		t.Errorf("stdout %q (truncated %v): want the last 32 bytes", res.Stdout, res.StdoutTruncated)
	}
}

func TestMissingProgramIsTerminal(t *testing.T) {
	res, err := Run(t.Context(), Spec{Path: "/no/such/interpreter"})
	if err == nil || !converge.IsTerminal(err) || res != nil {
		t.Fatalf("Run = %v, %v; want no result and a terminal error", res, err)
	}
	if !strings.Contains(err.Error(), `program "/no/such/interpreter" not found`) {
		t.Errorf("error %q does not name the missing program", err)
	}
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(t.Context(), Spec{Path: notExec}); err == nil || !converge.IsTerminal(err) {
		t.Errorf("running a file that is not executable: %v; want a terminal error", err)
	}
}

// hangWithGrandchild starts a background sleep (a grandchild of Run), writes
// its pid to a file and hangs.
func hangWithGrandchild(t *testing.T, trapTerm bool) (Spec, string) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
	trap := ""
	if trapTerm {
		trap = `trap "" TERM; `
	}
	return sh(trap + `sleep 300 & echo $! > ` + pidFile + `; while :; do sleep 1; done`), pidFile
}

func TestTimeoutKillsTheWholeGroup(t *testing.T) {
	spec, pidFile := hangWithGrandchild(t, false)
	spec.Timeout = 300 * time.Millisecond
	begin := time.Now()
	res, err := Run(t.Context(), spec)
	if err == nil || converge.IsTerminal(err) {
		t.Fatalf("Run: %v; want a transient error", err)
	}
	if !strings.Contains(err.Error(), "timed out after 300ms and was killed") {
		t.Errorf("error %q does not say it timed out", err)
	}
	if elapsed := time.Since(begin); elapsed > DefaultKillGrace {
		t.Errorf("took %s: SIGTERM should have ended it at once", elapsed)
	}
	if res.ExitCode != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d, want %d (SIGTERM)", res.ExitCode, 128+int(syscall.SIGTERM))
	}
	waitGone(t, readPid(t, pidFile))
}

func TestSIGKILLAfterGrace(t *testing.T) {
	spec, pidFile := hangWithGrandchild(t, true)
	spec.Timeout, spec.KillGrace = 300*time.Millisecond, 200*time.Millisecond
	res, err := Run(t.Context(), spec)
	if err == nil {
		t.Fatal("Run succeeded; want a timeout")
	}
	if res.ExitCode != 137 {
		t.Errorf("exit code %d, want 137: a program that ignores SIGTERM gets SIGKILL", res.ExitCode)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestCancelKillsAndWrapsCtxErr(t *testing.T) {
	spec, pidFile := hangWithGrandchild(t, false)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		waitFile(t, pidFile)
		cancel()
	}()
	_, err := Run(ctx, spec)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v; want it to wrap context.Canceled", err)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestDeadlineIsNamed(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, sh(`sleep 300`))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "passed the task deadline") {
		t.Fatalf("Run: %v; want a deadline error", err)
	}
}

func TestLeftoversAreKilledAfterExit(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "bg.pid")
	// The background sleep keeps stdout open; Run must not wait for it.
	begin := time.Now()
	_, err := Run(t.Context(), sh(`sleep 300 & echo $! > `+pidFile+`; echo done`))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if elapsed := time.Since(begin); elapsed > 10*time.Second {
		t.Errorf("took %s: a background process held Run up", elapsed)
	}
	waitGone(t, readPid(t, pidFile))
}

func TestInvalidUTF8TailIsCleaned(t *testing.T) {
	res, err := Run(t.Context(), sh(`printf '\377\376bad\n' >&2; exit 1`))
	if err == nil {
		t.Fatal("Run succeeded; want exit 1")
	}
	if !strings.Contains(res.StderrTail, "bad") || strings.ContainsRune(res.StderrTail, '\xff') {
		t.Errorf("stderr tail %q is not valid UTF-8", res.StderrTail)
	}
}

func TestValidTailDropsCutCharacter(t *testing.T) {
	s := []byte("é!") // 0xC3 0xA9 '!'
	if got := ValidTail(s[1:]); got != "!" {
		t.Errorf("ValidTail(cut é) = %q, want %q", got, "!")
	}
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	waitFile(t, file)
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

func waitFile(t *testing.T, file string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if raw, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(raw), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s was not written within 10s", file)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until pid is no longer running: gone, or a zombie waiting
// for whoever adopted it.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil && syscall.Kill(pid, 0) != nil {
			return
		}
		if fields := strings.Fields(string(stat)); len(fields) > 2 && fields[2] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d still runs 10s after Run returned", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
