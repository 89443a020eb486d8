package devpg

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func sysProcAttr(o *owner) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential: credential(o),
		// Its own process group, so a terminal's Ctrl-C reaches Converge,
		// which then stops the server in order, rather than both at once.
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL,
	}
}

// childPIDs lists the live children of pid from /proc.
func childPIDs(pid int) []int {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil
	}
	var out []int
	for _, path := range stats {
		child, ppid, state, ok := readStat(path)
		if ok && ppid == pid && state != "Z" {
			out = append(out, child)
		}
	}
	return out
}

func isZombie(pid int) bool {
	_, _, state, ok := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
	return ok && state == "Z"
}

// readStat parses the pid, parent pid and state from /proc/PID/stat. The
// command name in parentheses may hold spaces, so fields are read after
// its closing parenthesis.
func readStat(path string) (pid, ppid int, state string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, "", false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || end < open {
		return 0, 0, "", false
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 {
		return 0, 0, "", false
	}
	pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
	ppid, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil {
		return 0, 0, "", false
	}
	return pid, ppid, fields[0], true
}

// waitGone waits until every pid has exited (a zombie counts as exited:
// it holds no memory or files), or the timeout passes.
func waitGone(pids []int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			_, _, state, ok := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
			if !ok || state == "Z" {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
