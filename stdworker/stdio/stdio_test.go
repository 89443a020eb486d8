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

// TestObserveAndImport: the program gets the trigger observe and the
// import id, and its exit code 3 for an imported resource is a terminal
// ImportNotFound naming the id.
func TestObserveAndImport(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\nreq=$(cat)\ncase \"$req\" in\n" +
		"*'\"import_id\":\"vpc-0abc\"'*) printf '{\"status\": {\"found\": true}}' ;;\n" +
		"*) echo 'no such vpc' >&2; exit 3 ;;\nesac\n"
	if err := os.WriteFile(filepath.Join(dir, "look.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	observe := &convergev1.Reaction{Name: "look", Trigger: "observe", Emits: []string{"status"}}
	h, err := Handler(Settings{Command: []string{"./look.sh"}}, observe, WithBaseDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	res, err := h(t.Context(), &converge.Task{Trigger: "observe", ImportID: "vpc-0abc"})
	if err != nil || string(res.Status.(json.RawMessage)) != `{"found": true}` {
		t.Fatalf("observing vpc-0abc: %v, %v", res, err)
	}
	_, err = h(t.Context(), &converge.Task{Trigger: "observe", ImportID: "vpc-gone"})
	if !converge.IsTerminal(err) || converge.ReasonOf(err) != converge.ReasonImportNotFound ||
		!strings.Contains(err.Error(), `"vpc-gone"`) || !strings.Contains(err.Error(), "no such vpc") {
		t.Fatalf("a missing import: %v; want a terminal ImportNotFound naming vpc-gone with the program's stderr", err)
	}
	if _, err = h(t.Context(), &converge.Task{Trigger: "observe"}); converge.IsTerminal(err) {
		t.Fatalf("exit 3 without an import id: %v; want it transient like any other exit", err)
	}
	req := NewRequest(&converge.Task{Trigger: "observe", ImportID: "vpc-0abc"}, nil)
	if raw, _ := json.Marshal(req); !strings.Contains(string(raw), `"import_id":"vpc-0abc"`) {
		t.Fatalf("request %s lacks the import id", raw)
	}
	if raw, _ := json.Marshal(NewRequest(&converge.Task{}, nil)); strings.Contains(string(raw), "import_id") {
		t.Fatalf("request %s names an import id it does not have", raw)
	}
}
