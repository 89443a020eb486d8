//go:build unix

package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
)

// TestStdShellRunsScript: a std.shell resource runs its script, with its
// args and env, and reports the exit code and the output tails; a missing
// interpreter fails it terminally; exit 2 fails it with stderr's message; a
// script that outlasts timeout_seconds is killed and run again.
func TestStdShellRunsScript(t *testing.T) {
	d := startDev(t)
	if out := d.kindsApply(t); !strings.Contains(out, "kind std.shell/v1 created") {
		t.Fatalf("stdworker kinds apply printed %q; want std.shell created", out)
	}
	w := d.stdworker(t)
	w.waitOutput(t, "kind=std.shell@1", 30*time.Second)
	mark := filepath.Join(t.TempDir(), "ran-once")

	d.apply(t, fmt.Sprintf(`
type: resource
kind: std.shell
kind_version: 1
name: hangs-once
spec:
  timeout_seconds: 1
  script: |
    if [ ! -e %q ]; then touch %q; sleep 300; fi
    echo second run
`, mark, mark)+`---
type: resource
kind: std.shell
kind_version: 1
name: hello
spec:
  script: |
    echo "hello $1 and $GREETEE"
    echo "a warning" >&2
  args: [world]
  env: {GREETEE: you}
---
type: resource
kind: std.shell
kind_version: 1
name: no-interpreter
spec:
  script: echo never
  interpreter: /no/such/shell
---
type: resource
kind: std.shell
kind_version: 1
name: refuses
spec:
  script: |
    echo "the disk is full" >&2
    exit 2
`)
	r := d.waitPhase(t, "std.shell", "hello", client.PhaseReady, time.Minute)
	st := statusOf(t, r)
	if st["exit_code"] != float64(0) || st["stdout_tail"] != "hello world and you\n" || st["stderr_tail"] != "a warning\n" {
		t.Errorf("status %v: want exit_code 0 and the tails of stdout and stderr", st)
	}
	if ranAt, _ := st["ran_at"].(string); ranAt == "" {
		t.Errorf("status %v has no ran_at", st)
	} else if _, err := time.Parse(time.RFC3339, ranAt); err != nil {
		t.Errorf("status.ran_at %q: %v", ranAt, err)
	}

	// Killed at its timeout, retried, and the retry succeeds.
	r = d.waitPhase(t, "std.shell", "hangs-once", client.PhaseReady, time.Minute)
	if st := statusOf(t, r); st["stdout_tail"] != "second run\n" {
		t.Errorf("hangs-once status %v: want the second run's output", st)
	}

	r = d.waitPhase(t, "std.shell", "no-interpreter", client.PhaseFailed, time.Minute)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), `interpreter "/no/such/shell" (spec.interpreter) not found`) {
		t.Errorf("failure %v: want a terminal failure naming the missing interpreter", f)
	}

	r = d.waitPhase(t, "std.shell", "refuses", client.PhaseFailed, time.Minute)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), "exited with code 2; stderr: the disk is full") {
		t.Errorf("failure %v: want a terminal failure with the exit code and stderr", f)
	}
}

// TestStdShellExample runs stdworker/examples/stdshell/run.sh, the
// one-command demo, against the binaries under test.
func TestStdShellExample(t *testing.T) {
	begin(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("skipped: the std.shell example runs a python3 script, and python3 is not on PATH")
	}
	res := runExample(t, "stdworker/examples/stdshell/run.sh")
	for _, want := range []string{
		"hello from Linux", "root filesystem use: ",
		"bonjour alpha\n", "bonjour beta\n", "ran with bash ",
		"sum of 1..100 = 5050",
		`interpreter "/opt/nowhere/zsh" (spec.interpreter) not found`,
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("run.sh printed no %q\n%s", want, res)
		}
	}
}
