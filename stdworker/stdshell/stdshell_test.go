//go:build unix

package stdshell

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
)

func runTask(t *testing.T, settings Defaults, spec, config string) (*Status, error) {
	t.Helper()
	h := &handler{settings: settings, scripts: t.TempDir()}
	res, err := h.run(t.Context(), &converge.Task{Spec: json.RawMessage(spec), Config: json.RawMessage(config)})
	if err != nil {
		return nil, err
	}
	st, ok := res.Status.(Status)
	if !ok {
		t.Fatalf("status %T, want Status", res.Status)
	}
	return &st, nil
}

func TestDefaultsPrecedence(t *testing.T) {
	settings := Defaults{Interpreter: "/bin/sh", Env: map[string]string{"A": "settings", "B": "settings", "C": "settings"}}
	st, err := runTask(t, settings,
		`{"script": "echo $A $B $C $1", "args": ["x"], "env": {"A": "spec"}, "interpreter": "/usr/bin/env sh"}`,
		`{"env": {"A": "config", "B": "config"}, "interpreter": "/no/such"}`)
	if err != nil {
		t.Fatal(err)
	}
	if st.StdoutTail != "spec config settings x\n" || st.ExitCode != 0 {
		t.Errorf("status %+v: want the spec's env over the config's over the settings'", st)
	}
}

func TestMissingInterpreterNamesItsSource(t *testing.T) {
	for _, tc := range []struct {
		settings     Defaults
		spec, config string
		want         string
	}{
		{Defaults{}, `{"script": "x", "interpreter": "/no/sh"}`, `{}`, `interpreter "/no/sh" (spec.interpreter) not found`},
		{Defaults{}, `{"script": "x"}`, `{"interpreter": "nosuchshell-xyz"}`, `interpreter "nosuchshell-xyz" (the provider config's interpreter) not found`},
		{Defaults{Interpreter: "/no/bash"}, `{"script": "x"}`, ``, `interpreter "/no/bash" (the stdworker settings' interpreter) not found`},
	} {
		_, err := runTask(t, tc.settings, tc.spec, tc.config)
		if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v: want a terminal error containing %q", err, tc.want)
		}
	}
}

func TestBadSpecIsTerminal(t *testing.T) {
	for spec, want := range map[string]string{
		`{"script": "x", "intepreter": "sh"}`: `spec: unknown field "intepreter"`,
		`{"script": ""}`:                      "spec.script: empty",
		`{"script": 3}`:                       "spec: cannot unmarshal number",
	} {
		_, err := runTask(t, Defaults{}, spec, "")
		if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("spec %s: error %v; want a terminal error containing %q", spec, err, want)
		}
	}
}

func TestTailsAreBounded(t *testing.T) {
	st, err := runTask(t, Defaults{}, `{"script": "i=0; while [ $i -lt 3000 ]; do echo line $i; echo err $i >&2; i=$((i+1)); done"}`, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.StdoutTail) > TailBytes || !strings.HasSuffix(st.StdoutTail, "line 2999\n") {
		t.Errorf("stdout tail of %d bytes ending %q", len(st.StdoutTail), st.StdoutTail[max(0, len(st.StdoutTail)-20):])
	}
	if len(st.StderrTail) > TailBytes || !strings.HasSuffix(st.StderrTail, "err 2999\n") {
		t.Errorf("stderr tail of %d bytes", len(st.StderrTail))
	}
}

func TestExitCodes(t *testing.T) {
	_, err := runTask(t, Defaults{}, `{"script": "echo no >&2; exit 2"}`, "")
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "exited with code 2; stderr: no") {
		t.Errorf("exit 2: %v; want a terminal error with stderr", err)
	}
	_, err = runTask(t, Defaults{}, `{"script": "exit 5"}`, "")
	if err == nil || converge.IsTerminal(err) {
		t.Errorf("exit 5: %v; want a transient error", err)
	}
	_, err = runTask(t, Defaults{TimeoutSeconds: 1}, `{"script": "sleep 30"}`, "")
	if err == nil || converge.IsTerminal(err) || !strings.Contains(err.Error(), "timed out after 1s") {
		t.Errorf("timeout: %v; want a transient timeout", err)
	}
}
