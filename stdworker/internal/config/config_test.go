package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var providers = []string{"stdio", "stdshell"}

func TestParse(t *testing.T) {
	f, err := Parse([]byte(`
kinds:
  - kind: backup
    version: 1
    provider: stdio
    parallelism: 4
    settings: {command: ["./backup.sh"], timeout_seconds: 60, env: {A: "1"}}
  - kind: std.shell
    version: 1
    provider: stdshell
`), providers)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Kinds) != 2 || f.Kinds[0].Ref() != "backup@1" || f.Kinds[0].Parallelism != 4 || f.Kinds[1].Settings != nil {
		t.Fatalf("kinds %+v", f.Kinds)
	}
	if got := string(f.Kinds[0].Settings); got != `{"command":["./backup.sh"],"env":{"A":"1"},"timeout_seconds":60}` {
		t.Errorf("settings %s", got)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte(`
kinds:
  - kind: Backup
    version: 0
    provider: stdoi
    parallelism: -1
    settings: [1]
  - kind: a
    version: 1
    provider: stdio
  - kind: a
    version: 1
    provider: stdio
`), providers)
	if err == nil {
		t.Fatal("Parse accepted a bad file")
	}
	for _, want := range []string{
		`kinds[0].kind: "Backup" is not a kind name`,
		"kinds[0].version: 0 is not a kind version",
		`kinds[0].provider: "stdoi" is not a provider; known: stdio, stdshell`,
		"kinds[0].parallelism: -1 is out of range",
		"kinds[0].settings: must be a mapping",
		"kinds[2]: a@1 is already served by kinds[1]",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestParseRefusesUnknownKeys(t *testing.T) {
	_, err := Parse([]byte("kinds:\n  - kind: a\n    version: 1\n    provider: stdio\n    paralelism: 3\n"), providers)
	if err == nil || !strings.Contains(err.Error(), "field paralelism not found") {
		t.Errorf("error %v: want the unknown key named", err)
	}
}

func TestLoadSetsDir(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte("kinds: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p, providers)
	if err != nil || f.Dir != dir || len(f.Kinds) != 0 {
		t.Errorf("Load = %+v, %v", f, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), providers); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

func TestParseKinds(t *testing.T) {
	got, err := ParseKinds(" std.shell@1, backup@2 ")
	if err != nil || !got["std.shell@1"] || !got["backup@2"] || len(got) != 2 {
		t.Errorf("ParseKinds = %v, %v", got, err)
	}
	if got, err := ParseKinds(""); got != nil || err != nil {
		t.Errorf("ParseKinds(\"\") = %v, %v; want no restriction", got, err)
	}
	for _, bad := range []string{"std.shell", "std.shell@0", "Std@1", "a@x"} {
		if _, err := ParseKinds(bad); err == nil || !strings.Contains(err.Error(), "is not kind@version") {
			t.Errorf("ParseKinds(%q) = %v; want an error", bad, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("kinds:\n  - {kind: a, version: 1, provider: stdio, settings: {command: [x]}}\n"))
	f.Add([]byte("kinds: [{settings: [1]}]"))
	f.Add([]byte("kinds:\n  - settings: {? [a]: b}\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		file, err := Parse(raw, providers)
		if err != nil {
			return
		}
		for _, k := range file.Kinds {
			if k.Settings != nil && k.Settings[0] != '{' {
				t.Fatalf("settings %s are not an object", k.Settings)
			}
		}
	})
}
