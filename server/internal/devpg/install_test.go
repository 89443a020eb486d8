package devpg

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeApt is an installer whose apt-get is recorded, never run.
type fakeApt struct {
	root, apt bool
	// onInstall runs when "apt-get install" does; nil makes it do nothing.
	onInstall func()
	// fail makes the command whose first argument it names fail.
	fail    string
	ran     []string
	log     strings.Builder
	envSeen [][]string
}

func (f *fakeApt) installer() installer {
	return installer{
		log: &f.log,
		run: func(_ context.Context, env []string, name string, args ...string) (string, error) {
			f.ran = append(f.ran, filepath.Base(name)+" "+strings.Join(args, " "))
			f.envSeen = append(f.envSeen, env)
			if len(args) > 0 && args[0] == f.fail {
				return "Reading package lists...\nE: Unable to locate package postgresql\n", errors.New("exit status 100")
			}
			if len(args) > 0 && args[0] == "install" && f.onInstall != nil {
				f.onInstall()
			}
			return "", nil
		},
		isRoot: func() bool { return f.root },
		lookPath: func(file string) (string, error) {
			if !f.apt {
				return "", errors.New("executable file not found in $PATH")
			}
			return "/usr/bin/" + file, nil
		},
	}
}

// noBinaries empties every place findBinaries looks and returns a
// well-known directory an install may fill.
func noBinaries(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	t.Setenv(binEnv, "")
	t.Setenv("PATH", "")
	searchOnly(t, filepath.Join(root, "postgresql", "*", "bin"))
	return filepath.Join(root, "postgresql", "15", "bin")
}

func TestFindOrInstallFindsWithoutInstalling(t *testing.T) {
	want := filepath.Join(noBinaries(t), "..", "..", "16", "bin")
	fakeBin(t, want)
	f := &fakeApt{root: true, apt: true}
	got, err := f.installer().findOrInstall(t.Context())
	if err != nil || got != filepath.Clean(want) {
		t.Fatalf("findOrInstall = %q, %v; want %q", got, err, want)
	}
	if len(f.ran) != 0 || f.log.Len() != 0 {
		t.Errorf("ran %q and said %q; want nothing", f.ran, f.log.String())
	}
}

func TestFindOrInstallInstallsAsRootWithApt(t *testing.T) {
	dir := noBinaries(t)
	f := &fakeApt{root: true, apt: true, onInstall: func() { fakeBin(t, dir) }}
	got, err := f.installer().findOrInstall(t.Context())
	if err != nil || got != dir {
		t.Fatalf("findOrInstall = %q, %v; want %q", got, err, dir)
	}
	want := []string{"apt-get update -qq", "apt-get install -y -qq postgresql"}
	if !slices.Equal(f.ran, want) {
		t.Errorf("ran %q, want %q", f.ran, want)
	}
	for i, env := range f.envSeen {
		if !slices.Contains(env, "DEBIAN_FRONTEND=noninteractive") {
			t.Errorf("%s: env %q lacks DEBIAN_FRONTEND=noninteractive", f.ran[i], env)
		}
	}
	if !strings.Contains(f.log.String(), "installing the postgresql package with apt-get") {
		t.Errorf("log %q does not say it is installing", f.log.String())
	}
}

// wantNamesPackages checks err is ErrNoBinaries naming what to install.
func wantNamesPackages(t *testing.T, err error, more ...string) {
	t.Helper()
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("error = %v, want ErrNoBinaries", err)
	}
	want := append([]string{"apt-get install postgresql", "dnf install postgresql-server", "brew install postgresql@16", binEnv}, more...)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

func TestFindOrInstallCannotInstall(t *testing.T) {
	for name, f := range map[string]*fakeApt{
		"not root":   {root: false, apt: true},
		"no apt-get": {root: true, apt: false},
	} {
		t.Run(name, func(t *testing.T) {
			noBinaries(t)
			_, err := f.installer().findOrInstall(t.Context())
			wantNamesPackages(t, err)
			if len(f.ran) != 0 {
				t.Errorf("ran %q, want nothing", f.ran)
			}
		})
	}
	t.Run("CONVERGE_PG_BIN names an empty directory", func(t *testing.T) {
		noBinaries(t)
		empty := t.TempDir()
		t.Setenv(binEnv, empty)
		f := &fakeApt{root: true, apt: true}
		_, err := f.installer().findOrInstall(t.Context())
		wantNamesPackages(t, err, binEnv+"="+empty)
		if len(f.ran) != 0 {
			t.Errorf("ran %q; a pinned directory must not trigger an install", f.ran)
		}
	})
}

func TestFindOrInstallReportsFailedInstall(t *testing.T) {
	for _, step := range []string{"update", "install"} {
		t.Run(step, func(t *testing.T) {
			noBinaries(t)
			f := &fakeApt{root: true, apt: true, fail: step}
			_, err := f.installer().findOrInstall(t.Context())
			wantNamesPackages(t, err, "apt-get "+step, "exit status 100", "E: Unable to locate package postgresql")
			if last := f.ran[len(f.ran)-1]; !strings.HasPrefix(last, "apt-get "+step) {
				t.Errorf("ran %q; want it to stop after the failed %s", f.ran, step)
			}
		})
	}
	t.Run("installed elsewhere", func(t *testing.T) {
		noBinaries(t)
		f := &fakeApt{root: true, apt: true}
		_, err := f.installer().findOrInstall(t.Context())
		wantNamesPackages(t, err, "apt-get installed postgresql")
	})
}

func TestStartBinDir(t *testing.T) {
	empty := t.TempDir()
	_, err := Start(t.Context(), Options{BinDir: empty})
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), empty) {
		t.Fatalf("Start with an empty BinDir: %v; want ErrNoBinaries naming %s", err, empty)
	}
}

func TestRunCommandOutputAndFailure(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run:", err)
	}
	out, err := runCommand(t.Context(), []string{"CONVERGE_TEST_VAR=set"}, "sh", "-c", `echo "var=$CONVERGE_TEST_VAR"; echo oops >&2; exit 3`)
	if err == nil || !strings.Contains(out, "var=set") || !strings.Contains(out, "oops") {
		t.Fatalf("runCommand = %q, %v; want both streams and exit status 3", out, err)
	}
}
