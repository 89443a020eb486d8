package devpg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin makes dir hold executable initdb and postgres files.
func fakeBin(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"initdb", "postgres"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// searchOnly points the well-known search at patterns for one test.
func searchOnly(t *testing.T, patterns ...string) {
	t.Helper()
	orig := wellKnownDirs
	wellKnownDirs = patterns
	t.Cleanup(func() { wellKnownDirs = orig })
}

func TestNoBinaries(t *testing.T) {
	empty := t.TempDir()
	t.Setenv("PATH", "")
	searchOnly(t, filepath.Join(empty, "postgresql", "*", "bin"))

	t.Run("CONVERGE_PG_BIN empty", func(t *testing.T) {
		t.Setenv(binEnv, empty)
		_, err := Start(t.Context(), Options{})
		if !errors.Is(err, ErrNoBinaries) {
			t.Fatalf("Start error = %v, want ErrNoBinaries", err)
		}
		for _, want := range []string{binEnv + "=" + empty, "apt-get install postgresql", "--database-url"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
	t.Run("nothing anywhere", func(t *testing.T) {
		t.Setenv(binEnv, "")
		_, err := Start(t.Context(), Options{})
		if !errors.Is(err, ErrNoBinaries) {
			t.Fatalf("Start error = %v, want ErrNoBinaries", err)
		}
		for _, want := range []string{"searched: PATH, " + wellKnownDirs[0], "brew install postgresql@16", binEnv} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
}

func TestFindBinariesOrder(t *testing.T) {
	root := t.TempDir()
	t.Setenv(binEnv, "")
	t.Setenv("PATH", "")
	for _, v := range []string{"9.6", "10", "15", "16beta"} {
		fakeBin(t, filepath.Join(root, "lib", v, "bin"))
	}
	fakeBin(t, filepath.Join(root, "brew", "postgresql@14", "bin"))
	searchOnly(t, filepath.Join(root, "lib", "*", "bin"), filepath.Join(root, "brew", "postgresql*", "bin"))

	got, err := findBinaries()
	if want := filepath.Join(root, "lib", "16beta", "bin"); err != nil || got != want {
		t.Errorf("newest of /usr/lib style dirs: got %q, %v; want %q", got, err, want)
	}

	onPath := fakeBin(t, filepath.Join(root, "path"))
	t.Setenv("PATH", strings.Join([]string{filepath.Join(root, "nothing"), onPath}, string(os.PathListSeparator)))
	if got, err := findBinaries(); err != nil || got != onPath {
		t.Errorf("PATH before well-known dirs: got %q, %v; want %q", got, err, onPath)
	}

	pinned := fakeBin(t, filepath.Join(root, "pinned"))
	t.Setenv(binEnv, pinned)
	if got, err := findBinaries(); err != nil || got != pinned {
		t.Errorf("%s first: got %q, %v; want %q", binEnv, got, err, pinned)
	}
}

func TestVersionOrder(t *testing.T) {
	got := newestFirst("/nonexistent/*")
	if len(got) != 0 {
		t.Errorf("newestFirst of no matches = %v", got)
	}
	dir := t.TempDir()
	for _, v := range []string{"9.6", "10", "9.10", "postgresql"} {
		if err := os.Mkdir(filepath.Join(dir, v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got = newestFirst(filepath.Join(dir, "*"))
	var names []string
	for _, g := range got {
		names = append(names, filepath.Base(g))
	}
	if want := "10 9.10 9.6 postgresql"; strings.Join(names, " ") != want {
		t.Errorf("order = %v, want %s", names, want)
	}
}
