package devpg

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatalf("run true: %v", err)
	}
	return cmd.Process.Pid
}

func TestSweepStale(t *testing.T) {
	tmp := t.TempDir()
	dead := deadPID(t)
	mk := func(name string, pids ...int) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if len(pids) == 2 {
			if err := writePidFile(dir, pids[0], pids[1]); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	stale := mk("converge-pg-stale", dead, dead)
	staleNoServer := mk("converge-pg-noserver", dead, 0)
	ownerAlive := mk("converge-pg-owner", os.Getpid(), dead)
	serverAlive := mk("converge-pg-server", dead, os.Getpid())
	kept := mk("converge-pg-kept")
	other := mk("unrelated", dead, dead)

	sweepStale(tmp)

	for _, dir := range []string{stale, staleNoServer} {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want removed", filepath.Base(dir), err)
		}
	}
	for _, dir := range []string{ownerAlive, serverAlive, kept, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s removed (%v), want kept", filepath.Base(dir), err)
		}
	}
}

func TestPidFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, _, ok := readPidFile(dir); ok {
		t.Error("readPidFile of a missing file: ok")
	}
	if err := writePidFile(dir, 12, 34); err != nil {
		t.Fatal(err)
	}
	if o, s, ok := readPidFile(dir); !ok || o != 12 || s != 34 {
		t.Errorf("readPidFile = %d, %d, %v; want 12, 34, true", o, s, ok)
	}
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte("owner=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := readPidFile(dir); ok {
		t.Error("readPidFile of a corrupt file: ok")
	}
}
