//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// faultyProgram is a stdio program whose spec.mode picks its behaviour.
const faultyProgram = `#!/usr/bin/env bash
set -euo pipefail
req=$(cat)
mode=$(jq -r '.spec.mode' <<<"$req")
attempt=$(jq '.attempt' <<<"$req")
name=$(jq -r '.resource.name' <<<"$req")
succeed() { jq -n --argjson a "$attempt" '{status: {attempt: $a}}'; }
case "$mode" in
ok)
	echo "echoing the request" >&2
	jq -c '{status: {attempt: .attempt, protocol: .protocol, kind: .resource.kind, version: .resource.version,
		namespace: .resource.namespace, name: .resource.name, generation: .resource.generation,
		labels: .resource.labels, reaction: .reaction.name, trigger: .reaction.trigger,
		emits: .reaction.emits, deadline: .deadline, config: .config, spec: .spec}}' <<<"$req" ;;
exit2)
	echo "mode exit2: refusing for good" >&2
	exit 2 ;;
garbage)
	echo "this is not json {" ;;
flood)
	head -c 2000000 /dev/zero | tr '\0' x ;;
hang)
	# The first attempt hangs, with a grandchild; later ones succeed.
	if [ "$attempt" = 1 ]; then
		sleep 300 &
		echo $! > "$PIDDIR/$name.pid"
		wait
	fi
	succeed ;;
crash)
	if [ "$attempt" = 1 ]; then
		echo "crashing on attempt 1" >&2
		kill -KILL $$
	fi
	succeed ;;
slow)
	echo started > "$PIDDIR/$name.started"
	sleep 2
	succeed ;;
esac
`

const faultyKind = `
type: manifest
kind: t.faulty
kind_version: 1
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
`

// faultyWorker writes the faulty program and a config serving t.faulty
// with it, and returns the config's path and the directory programs write
// pid files to.
func faultyWorker(t *testing.T, timeoutSeconds int) (config, pidDir string) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("skipped: the bash stdio test programs need jq, which is not on PATH")
	}
	dir := t.TempDir()
	pidDir = filepath.Join(dir, "pids")
	if err := os.Mkdir(pidDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "faulty.sh", faultyProgram, 0o755)
	config = writeFile(t, dir, "stdworker.yaml", fmt.Sprintf(`
kinds:
  - kind: t.faulty
    version: 1
    provider: stdio
    settings:
      command: [./faulty.sh]
      timeout_seconds: %d
      env: {PIDDIR: %q}
`, timeoutSeconds, pidDir), 0o644)
	return config, pidDir
}

func faultyResource(name, mode string) string {
	return fmt.Sprintf("---\ntype: resource\nkind: t.faulty\nkind_version: 1\nname: %s\nlabels: {team: infra}\nspec: {mode: %s}\n", name, mode)
}

// TestStdioBashKind: a bash program serving a user kind gets the documented
// request and its status reaches the resource; exit 2, garbage and too much
// output fail it terminally with a message that says why; a hanging
// program is killed whole at its timeout and retried; a program killed by
// SIGKILL (exit 137) is retried.
func TestStdioBashKind(t *testing.T) {
	d := startDev(t)
	config, pidDir := faultyWorker(t, 2)
	d.apply(t, faultyKind+`---
type: providerconfig
kind: t.faulty
kind_version: 1
name: default
config: {region: eu-west-1}
`+faultyResource("ok", "ok")+faultyResource("exit2", "exit2")+faultyResource("garbage", "garbage")+
		faultyResource("flood", "flood")+faultyResource("hang", "hang")+faultyResource("crash", "crash"))
	d.stdworker(t, "--config", config)

	r := d.waitPhase(t, "t.faulty", "ok", client.PhaseReady, time.Minute)
	st := statusOf(t, r)
	for key, want := range map[string]any{
		"protocol": "converge.stdio/v1", "kind": "t.faulty", "version": float64(1), "namespace": "default",
		"name": "ok", "generation": float64(1), "reaction": "reconcile", "trigger": "specChange", "attempt": float64(1),
	} {
		if st[key] != want {
			t.Errorf("status.%s = %v, want %v (status %v)", key, st[key], want, st)
		}
	}
	if fmt.Sprint(st["labels"]) != "map[team:infra]" || fmt.Sprint(st["spec"]) != "map[mode:ok]" ||
		fmt.Sprint(st["config"]) != "map[region:eu-west-1]" || fmt.Sprint(st["emits"]) != "[status]" {
		t.Errorf("status %v: the request's labels, spec, config or emits did not reach the program", st)
	}
	if deadline, _ := st["deadline"].(string); deadline == "" {
		t.Errorf("status %v: the request had no deadline", st)
	} else if _, err := time.Parse(time.RFC3339Nano, deadline); err != nil {
		t.Errorf("request deadline %q: %v", deadline, err)
	}

	for _, tc := range []struct{ name, message string }{
		{"exit2", `program "./faulty.sh" exited with code 2; stderr: mode exit2: refusing for good`},
		{"garbage", `response is not a converge.stdio/v1 JSON object: invalid character 'h' in literal true (expecting 'r') at byte 2 (line 1, column 2); stdout begins "this is not json {"`},
		{"flood", `program "./faulty.sh": output exceeds 1 MiB on stdout`},
	} {
		r := d.waitPhase(t, "t.faulty", tc.name, client.PhaseFailed, time.Minute)
		if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), tc.message) {
			t.Errorf("%s: failure %v: want a terminal failure containing %q", tc.name, f, tc.message)
		}
	}

	r = d.waitFor(t, "t.faulty", "hang", "Ready on attempt 2", time.Minute, retriedReady)
	waitGone(t, readPid(t, filepath.Join(pidDir, "hang.pid")))
	if ev := d.conctl(t, "", "events", "t.faulty/hang", "-o", "json"); !strings.Contains(ev.stdout, "timed out after 2s and was killed") {
		t.Errorf("the hang's events do not say it timed out:\n%s", ev)
	}
	d.waitFor(t, "t.faulty", "crash", "Ready on attempt 2", time.Minute, retriedReady)
	if ev := d.conctl(t, "", "events", "t.faulty/crash", "-o", "json"); !strings.Contains(ev.stdout, "killed by SIGKILL (exit code 137)") {
		t.Errorf("the crash's events do not give exit code 137:\n%s", ev)
	}
}

// retriedReady: Ready with the status of a second (or later) attempt.
func retriedReady(r *convergev1.Resource) bool {
	a, ok := r.GetStatus().AsMap()["attempt"].(float64)
	return r.GetPhase() == client.PhaseReady && ok && a >= 2
}

// TestStdioDrain: on SIGTERM stdworker lets a running program finish and
// reports its result, kills a program that outlasts --drain-timeout with
// its whole process group, and exits 0.
func TestStdioDrain(t *testing.T) {
	d := startDev(t)
	config, pidDir := faultyWorker(t, 0)
	d.apply(t, faultyKind+faultyResource("slow", "slow")+faultyResource("hang", "hang"))
	w := d.stdworker(t, "--config", config, "--drain-timeout", "4s")
	waitFileE2E(t, filepath.Join(pidDir, "slow.started"))
	pid := readPid(t, filepath.Join(pidDir, "hang.pid"))

	w.signal(t, syscall.SIGTERM)
	if code := w.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("stdworker exited %d after SIGTERM, want 0\n%s", code, w.output())
	}
	waitGone(t, pid)
	r := d.get(t, "t.faulty", "slow")
	if r.GetPhase() != client.PhaseReady {
		t.Errorf("slow is %s after the drain, want Ready: its result must be reported before stdworker exits\n%s", r.GetPhase(), show(r))
	}
	if !strings.Contains(w.output(), "drained") {
		t.Errorf("stdworker did not log its drain:\n%s", w.output())
	}
}

// TestStdioExample runs stdworker/examples/stdio/run.sh, the one-command
// demo, against the binaries under test.
func TestStdioExample(t *testing.T) {
	begin(t)
	for _, tool := range []string{"jq", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: the stdio example needs %s, which is not on PATH", tool)
		}
	}
	res := runExample(t, "stdworker/examples/stdio/run.sh")
	for _, want := range []string{
		"motd: Deploys are frozen until Monday, platform team!",
		"lines: 3", "words: 21",
		`Message:          program "./motd.sh" exited with code 2; stderr: spec.message: the word "forbidden" is not allowed`,
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("run.sh printed no %q\n%s", want, res)
		}
	}
}
