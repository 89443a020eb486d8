package conctl_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/conctl"
)

func TestUsageErrors(t *testing.T) {
	_, url := newFake(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods"}, "error: conctl get: unknown type \"pods\" (one of kind, providerconfig, reactorbinding, resource)\nRun 'conctl get --help' for usage.\n"},
		{[]string{"get"}, "error: conctl get needs a type: one of kind, providerconfig, reactorbinding, resource\nRun 'conctl get --help' for usage.\n"},
		{[]string{"get", "resource", "hello"}, "error: resource \"hello\": want KIND/NAME, e.g. greeting/hello-world\nRun 'conctl get resource --help' for usage.\n"},
		{[]string{"get", "resource"}, "error: conctl get resource needs KIND/NAME, e.g. greeting/hello-world\nRun 'conctl get resource --help' for usage.\n"},
		{[]string{"get", "kind", "greeting/vx"}, "error: kind \"greeting/vx\": the version must be a positive integer, e.g. greeting/v1\nRun 'conctl get kind --help' for usage.\n"},
		{[]string{"list", "resources", "-o", "xml"}, "error: --output: \"xml\" is not one of table, wide, json, yaml\nRun 'conctl list resources --help' for usage.\n"},
		{[]string{"list", "kinds", "-o", "wide"}, "error: --output: \"wide\" is not one of table, json, yaml\nRun 'conctl list kinds --help' for usage.\n"},
		{[]string{"get", "resource", "a/b", "-o", "dot"}, "error: --output: \"dot\" is not one of table, wide, json, yaml\nRun 'conctl get resource --help' for usage.\n"},
		{[]string{"describe", "resource", "a/b", "-o", "wide"}, "error: --output: \"wide\" is not one of table, json, yaml\nRun 'conctl describe resource --help' for usage.\n"},
		{[]string{"list", "kinds", "--server", "localhost:7070"}, "error: --server: \"localhost:7070\" is not an http(s) URL, e.g. http://localhost:7070\nRun 'conctl list kinds --help' for usage.\n"},
		{[]string{"apply"}, "error: apply needs at least one -f FILE, DIR or - (stdin)\nRun 'conctl apply --help' for usage.\n"},
		{[]string{"apply", "-x"}, "error: unknown shorthand flag: 'x' in -x\nRun 'conctl apply --help' for usage.\n"},
		{[]string{"bogus"}, "error: unknown command \"bogus\" for \"conctl\"\nRun 'conctl --help' for usage.\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(testContext(t), url, "", tc.args...)
			if r.code != 1 || r.stderr != tc.want {
				t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", r.code, r.stderr, tc.want)
			}
		})
	}
}

func TestServerFromEnvironmentAndUnreachable(t *testing.T) {
	var out, errOut bytes.Buffer
	code := conctl.Run(context.Background(), []string{"list", "kinds"},
		conctl.WithStdio(strings.NewReader(""), &out, &errOut),
		conctl.WithGetenv(func(k string) string {
			if k == "CONVERGE_SERVER" {
				return "http://127.0.0.1:1"
			}
			return ""
		}))
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: list kinds: ") ||
		lines[1] != "Is the server running at http://127.0.0.1:1? Set it with --server or CONVERGE_SERVER." {
		t.Fatalf("stderr:\n%s", errOut.String())
	}
}

func TestEveryCommandHasHelpAndExamples(t *testing.T) {
	var out bytes.Buffer
	if code := conctl.Run(context.Background(), []string{"--help"}, conctl.WithStdio(nil, &out, &out)); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	// Walk the tree through each command's own help: every command must
	// explain itself and show an example.
	visited := 0
	var walk func(path []string)
	walk = func(path []string) {
		visited++
		var buf bytes.Buffer
		args := append(append([]string{}, path...), "--help")
		if code := conctl.Run(context.Background(), args, conctl.WithStdio(nil, &buf, &buf)); code != 0 {
			t.Errorf("%v: exit %d", args, code)
			return
		}
		help := buf.String()
		if len(path) > 0 && !strings.Contains(help, "Examples:") {
			t.Errorf("conctl %s --help has no examples", strings.Join(path, " "))
		}
		for _, sub := range subcommands(help) {
			walk(append(append([]string{}, path...), sub))
		}
	}
	walk(nil)
	if visited < 33 { // root, 16 commands, 13 typed subcommands, op get, op list, kind policy
		t.Fatalf("visited %d commands, want at least 33", visited)
	}
}

func TestCompositeCommandsExplainThemselves(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"\n  tree ", "\n  graph ", "conctl tree landingzone/acme"}},
		{[]string{"tree", "--help"}, []string{"--depth int", "--children int", "--ascii", "culprit", "... and N more", "-o json"}},
		{[]string{"graph", "--help"}, []string{"--max-nodes int", "-o dot", "dot -Tsvg", "dependent -> dependency", "external"}},
		{[]string{"describe", "resource", "--help"}, []string{"--ascii", "conctl describe resource landingzone/acme", "conctl tree"}},
		{[]string{"describe", "--help"}, []string{"culprits", "tree of descendants"}},
		{[]string{"get", "resource", "--help"}, []string{"-o wide", "owns"}},
		{[]string{"list", "resources", "--help"}, []string{"-o wide", "OWNER"}},
		{[]string{"apply", "--help"}, []string{"deletion_policy"}},
	} {
		var out bytes.Buffer
		if code := conctl.Run(context.Background(), tc.args, conctl.WithStdio(nil, &out, &out)); code != 0 {
			t.Errorf("%v: exit %d", tc.args, code)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(out.String(), want) {
				t.Errorf("conctl %s lacks %q:\n%s", strings.Join(tc.args, " "), want, out.String())
			}
		}
	}
}

// subcommands reads the "Available Commands:" section of a help text.
func subcommands(help string) []string {
	_, rest, ok := strings.Cut(help, "Available Commands:\n")
	if !ok {
		return nil
	}
	var names []string
	for _, line := range strings.Split(rest, "\n") {
		if strings.TrimSpace(line) == "" {
			break
		}
		name := strings.Fields(line)[0]
		if name != "help" && name != "completion" {
			names = append(names, name)
		}
	}
	return names
}
