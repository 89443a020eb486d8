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
