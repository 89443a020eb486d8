package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, stdin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut, func(k string) string { return env[k] })
	return code, out.String(), errOut.String()
}

func TestCommandMakesTheOutputDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "internal", "kinds", "kinds_gen.go")
	if code, _, stderr := runCLI(t, "", nil, filepath.Join("testdata", "versions.yaml"), "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
}

func TestCommandWritesAFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "kinds_gen.go")
	manifest := filepath.Join("testdata", "versions.yaml")
	if code, _, stderr := runCLI(t, "", nil, manifest, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// Without --package or $GOPACKAGE, the package is named after the
	// output's directory when that is an identifier, else "kinds".
	want := "package kinds\n"
	if base := filepath.Base(dir); isIdentifier(base) {
		want = "package " + base + "\n"
	}
	if !strings.Contains(string(src), want) || !strings.Contains(string(src), "from testdata/versions.yaml. DO NOT EDIT.") {
		t.Fatalf("output:\n%s", src)
	}
}

func TestCommandPackageFromGoGenerate(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", map[string]string{"GOPACKAGE": "mykinds"}, filepath.Join("testdata", "versions.yaml"))
	if code != 0 || !strings.Contains(stdout, "package mykinds\n") {
		t.Fatalf("exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
}

func TestCommandReadsStdin(t *testing.T) {
	yaml := "type: manifest\nkind: piped\nkind_version: 1\nreactions: [{name: reconcile, trigger: specChange, emits: [status]}]\n"
	code, stdout, stderr := runCLI(t, yaml, nil, "-p", "x", "-")
	if code != 0 || !strings.Contains(stdout, `const PipedKind = "piped"`) || !strings.Contains(stdout, "from -. DO NOT EDIT.") {
		t.Fatalf("exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
}

func TestCommandHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "", nil, "--help")
	if code != 0 || !strings.HasPrefix(stdout, "usage: converge-go-types") {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
}

func TestCommandExplainsBadUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	resource := write("r.yaml", "type: resource\nkind: hello\nkind_version: 1\nname: x\n")
	bad := write("bad.yaml", "type: manifest\nkind: x\nkind_version: zero\n")
	bare := write("bare.yaml", "kind: x\nkind_version: 1\n")
	twice := write("twice.yaml", "type: manifest\nkind: x\nkind_version: 1\n---\ntype: manifest\nkind: x\nkind_version: 1\n")
	clash := write("clash.yaml", "type: manifest\nkind: a.b\nkind_version: 1\n---\ntype: manifest\nkind: a-b\nkind_version: 1\n")
	reactions := write("reactions.yaml", "type: manifest\nkind: x\nkind_version: 1\nreactions:\n"+
		"  - {name: on-delete, trigger: deleteRequested, emits: [finalizer]}\n  - {name: onDelete, trigger: specChange, emits: [status]}\n")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no file", nil, "no manifest file given"},
		{"unknown flag", []string{"--frobnicate", resource}, "unknown flag --frobnicate"},
		{"flag without value", []string{resource, "-o"}, "-o needs a value"},
		{"empty out", []string{"-o", "", resource}, "-o needs a file name"},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, "read " + filepath.Join(dir, "nope.yaml")},
		{"no manifest", []string{resource}, `no manifest (a document with "type: manifest") in ` + resource},
		{"bad manifest", []string{bad}, "bad.yaml: document 1 (line 3): kind_version"},
		{"no type", []string{bare}, `bare.yaml: document 1 (line 1): missing "type"`},
		{"twice", []string{twice}, `kind "x" version 1: appears twice`},
		{"clash", []string{clash}, `kind "a-b" version 1: its constant ABKind is kind "a.b"'s already`},
		{"reaction clash", []string{reactions}, "constant XV1ReactionOnDelete is already declared"},
		{"invalid package", []string{"-package", "my-kinds", filepath.Join("testdata", "versions.yaml")}, `package name "my-kinds" is not a Go identifier`},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", nil, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "usage: converge-go-types") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, c.want)
			}
		})
	}
}
