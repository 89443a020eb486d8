package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDevSecretKeyIsGeneratedOnceAndKept: converge dev over an existing
// database keeps its throwaway key in the user's config directory,
// writes it once (mode 0600) and reads the same key at the next start.
func TestDevSecretKeyIsGeneratedOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	first, err := devSecretKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := os.UserConfigDir()
	info, err := os.Stat(filepath.Join(base, "converge", "dev-secret.key"))
	if err != nil {
		t.Fatalf("the dev key file: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the dev key file has mode %v, want 0600", info.Mode().Perm())
	}
	second, err := devSecretKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 1 || len(second) != 1 || first[0].ID != second[0].ID {
		t.Errorf("the dev key changed between starts: %v, %v", first, second)
	}
}
