//go:build unix

package stdio

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

var reconcile = &convergev1.Reaction{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}

func TestHandlerRunsTheProgramFromTheBaseDir(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nread req\nprintf '{\"status\": {\"pwd\": \"%s\", \"env\": \"%s\", \"arg\": \"%s\"}}' \"$(pwd)\" \"$GREETING\" \"$1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "prog.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := Handler(Settings{Command: []string{"./prog.sh", "first"}, Env: map[string]string{"GREETING": "hi"}},
		reconcile, WithBaseDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h(t.Context(), &converge.Task{Kind: "k", KindVersion: 1, Reaction: "reconcile", Trigger: "specChange"})
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]string
	if err := json.Unmarshal(res.Status.(json.RawMessage), &st); err != nil {
		t.Fatal(err)
	}
	if st["pwd"] != dir || st["env"] != "hi" || st["arg"] != "first" {
		t.Errorf("status %v: want the program run in %s with its env and args", st, dir)
	}
}

func TestHandlerErrorsNameTheProgram(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.sh"), []byte("#!/bin/sh\necho '{\"stauts\": {}}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := Handler(Settings{Command: []string{"./bad.sh"}}, reconcile, WithBaseDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h(t.Context(), &converge.Task{Trigger: "specChange"})
	if !converge.IsTerminal(err) || !strings.Contains(err.Error(), `program "./bad.sh": response is not a converge.stdio/v1 JSON object: unknown field "stauts"`) {
		t.Errorf("error %v: want a terminal error naming the program and the field", err)
	}
}

func TestBadSettings(t *testing.T) {
	for raw, want := range map[string]string{
		`{}`:                              "command: name the program to run",
		`{"command": ["x"], "comand": 1}`: `unknown field "comand"`,
		`{"command": ["x"], "env": {"A=B": "c"}}`:   `env: "A=B" is not an environment variable name`,
		`{"command": ["x"], "timeout_seconds": -1}`: "must not be negative",
	} {
		_, err := (&stdio{baseDir: "/"}).program(json.RawMessage(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("settings %s: %v; want an error containing %q", raw, err, want)
		}
	}
}
