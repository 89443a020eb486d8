package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--state-dir", t.TempDir()))
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

func TestBadFlagsAreRefusedBeforeDialling(t *testing.T) {
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badConfig, []byte("kinds:\n  - {kind: a, version: 1, provider: stdterraform-typo}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kinds", "std.shell"}, `--kinds: "std.shell" is not kind@version`},
		{[]string{"--parallelism", "0"}, "--parallelism: 0 is out of range"},
		{[]string{"--tls-ca", "ca.pem"}, "need an https:// server"},
		{[]string{"--server", "localhost"}, `--server: "localhost" is not an http:// or https:// URL`},
		{[]string{"--config", filepath.Join(dir, "none.yaml")}, "none.yaml: no such file"},
		{[]string{"--config", badConfig}, `kinds[0].provider: "stdterraform-typo" is not a provider; known: stdcel, stdio, stdshell, stdstarlark, stdterraform`},
		{[]string{"--log-level", "loud"}, `--log-level: "loud"`},
	} {
		_, err := execute(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("stdworker %s: %v; want an error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}

// TestHelpNamesEveryFlag keeps --help true to the code: every flag is
// documented, and the providers the help names exist.
func TestHelpNamesEveryFlag(t *testing.T) {
	out, err := execute(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--server", "--tls-ca", "--tls-cert", "--tls-key", "--config", "--kinds",
		"--parallelism", "--state-dir", "--drain-timeout", "CONVERGE_SERVER", "kinds apply"} {
		if !strings.Contains(out, flag) {
			t.Errorf("--help does not mention %s", flag)
		}
	}
	for name := range providers("") {
		if !strings.Contains(out, name) {
			t.Errorf("--help does not name the %s provider", name)
		}
	}
}

// TestUnknownSubcommandsFail: a subcommand that does not exist is an
// error naming it, followed by the usage, on stderr, with exit code 1 (as
// conctl treats unknown commands), not the help with exit code 0.
func TestUnknownSubcommandsFail(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, use string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "stdworker" (one of kinds)`, "stdworker [flags]"},
		{[]string{"kinds", "bogus"}, `unknown command "bogus" for "stdworker kinds" (one of apply, generate, list)`, "stdworker kinds [command]"},
		{[]string{"kinds", "list", "extra"}, `stdworker kinds list takes no arguments, got ["extra"]`, "stdworker kinds list [flags]"},
		{[]string{"--bogus"}, "unknown flag: --bogus", "stdworker [flags]"},
	} {
		var out, errOut bytes.Buffer
		code := run(t.Context(), tc.args, &out, &errOut)
		name := "stdworker " + strings.Join(tc.args, " ")
		if code != 1 {
			t.Errorf("%s: exit code %d, want 1", name, code)
		}
		if out.Len() != 0 {
			t.Errorf("%s: wrote %q to stdout, want nothing", name, out.String())
		}
		if e := errOut.String(); !strings.HasPrefix(e, "stdworker: "+tc.want+"\n") || !strings.Contains(e, "Usage:\n") || !strings.Contains(e, tc.use) {
			t.Errorf("%s: stderr %q; want the error %q, then the usage with %q", name, e, tc.want, tc.use)
		}
	}
	// A group named alone still shows its help, and a known leaf runs.
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"kinds"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Available Commands") {
		t.Errorf("stdworker kinds: exit %d, stdout %q, stderr %q; want its help", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"kinds", "list"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "std.shell/v1") {
		t.Errorf("stdworker kinds list: exit %d, stdout %q", code, out.String())
	}
}

// TestKindsGenerate: generate from a schema file writes the kinds; its
// mistakes name the flag.
func TestKindsGenerate(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tf-time")
	schema := filepath.Join("..", "..", "stdterraform", "tfgen", "testdata", "time-0.14.2.json")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"kinds", "generate", "--provider", "hashicorp/time@v0.14.2", "--schema", schema, "--out", out, "--owner", "tf-time"}, &stdout, &stderr); code != 0 {
		t.Fatalf("kinds generate: exit %d, stderr %q", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "kind tf.time.static/v1 created") {
		t.Errorf("kinds generate printed %q; want tf.time.static/v1 created", stdout.String())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--schema", schema, "--out", out, "--owner", "tf-time"}, "--provider: required"},
		{[]string{"--provider", "hashicorp/time", "--out", out, "--owner", "tf-time"}, "--provider: \"hashicorp/time\" must be SOURCE@VERSION"},
		{[]string{"--provider", "hashicorp/time@0.14.2", "--schema", schema, "--out", out, "--owner", "other"}, "--out:"},
		{[]string{"--provider", "hashicorp/time@0.14.2", "--schema", schema, "--out", out, "--owner", "tf-time", "--data-sources"}, "not generated yet"},
		{[]string{"--provider", "hashicorp/time@0.14.2", "--schema", "/nonexistent.json", "--out", out, "--owner", "tf-time"}, "--schema:"},
	} {
		stdout.Reset()
		stderr.Reset()
		args := append([]string{"kinds", "generate"}, tc.args...)
		if code := run(t.Context(), args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("stdworker %s: exit %d, stderr %q; want 1 and %q", strings.Join(args, " "), code, stderr.String(), tc.want)
		}
	}
}
