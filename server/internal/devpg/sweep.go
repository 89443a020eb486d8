package devpg

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// dirPattern names cluster directories under os.TempDir().
const dirPattern = "converge-pg-*"

// pidFile, in a cluster's directory, records the Converge process that
// owns the cluster and the postmaster's pid, so a later Start can tell an
// abandoned directory from one in use. A kept directory has none.
const pidFile = "devpg.pid"

func writePidFile(dir string, ownerPID, serverPID int) error {
	tmp := filepath.Join(dir, pidFile+".tmp")
	body := fmt.Sprintf("owner=%d\nserver=%d\n", ownerPID, serverPID)
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return fmt.Errorf("devpg: write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, pidFile)); err != nil {
		return fmt.Errorf("devpg: write %s: %w", filepath.Join(dir, pidFile), err)
	}
	return nil
}

// readPidFile returns the owner and server pids recorded in dir.
func readPidFile(dir string) (ownerPID, serverPID int, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, 0, false
	}
	fields := map[string]int{}
	for line := range strings.Lines(string(b)) {
		k, v, found := strings.Cut(strings.TrimSpace(line), "=")
		n, err := strconv.Atoi(v)
		if !found || err != nil {
			return 0, 0, false
		}
		fields[k] = n
	}
	ownerPID, hasOwner := fields["owner"]
	serverPID, hasServer := fields["server"]
	return ownerPID, serverPID, hasOwner && hasServer
}

// sweepStale removes cluster directories under tmp whose owner and server
// have both exited. It is best effort: a directory it cannot judge or
// remove is left alone, and a live one is never touched.
func sweepStale(tmp string) {
	dirs, err := filepath.Glob(filepath.Join(tmp, dirPattern))
	if err != nil {
		return
	}
	for _, dir := range dirs {
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		ownerPID, serverPID, ok := readPidFile(dir)
		if !ok || processAlive(ownerPID) || processAlive(serverPID) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}
