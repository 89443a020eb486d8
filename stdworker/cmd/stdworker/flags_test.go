package main

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestStateDirRule(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	home := func(dir string, err error) func() (string, error) { return func() (string, error) { return dir, err } }
	noHome := home("", errors.New("no home"))
	for _, c := range []struct {
		name, flag string
		env        map[string]string
		home       func() (string, error)
		want       string
	}{
		{"the flag wins", "/srv/state", map[string]string{"XDG_STATE_HOME": "/x"}, home("/home/u", nil), "/srv/state"},
		{"XDG_STATE_HOME", "", map[string]string{"XDG_STATE_HOME": "/x"}, home("/home/u", nil), filepath.Join("/x", "converge-stdworker")},
		{"the home directory", "", nil, home("/home/u", nil), filepath.Join("/home/u", ".local", "state", "converge-stdworker")},
		{"no home directory", "", nil, noHome, filepath.Join("/tmpdir", "converge-stdworker")},
		{"an empty home directory", "", nil, home("", nil), filepath.Join("/tmpdir", "converge-stdworker")},
	} {
		if got := stateDir(c.flag, env(c.env), c.home, "/tmpdir"); got != c.want {
			t.Errorf("%s: stateDir = %q, want %q", c.name, got, c.want)
		}
	}
}

// The help shows no default taken from this machine: the flag's default
// is empty and the rule is in words.
func TestStateDirHelpHasNoMachineDefault(t *testing.T) {
	f := rootCmd().Flags().Lookup("state-dir")
	if f == nil {
		t.Fatal("no --state-dir flag")
	}
	if f.DefValue != "" {
		t.Fatalf("--state-dir defaults to %q; want empty, computed when serve runs", f.DefValue)
	}
}
