// Package gencheck holds the test that generated code matches the protos.
package gencheck

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// generated lists the trees scripts/gen.sh writes.
var generated = []string{
	"sdk-go/gen",
	"sdk-ts/gen",
	"server/internal/api/openapi/gen",
	"server/internal/api/openapi/openapi.json",
}

// TestGeneratedCodeIsCurrent regenerates into a temporary directory and
// fails if any generated file differs from the committed one.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	if _, err := os.Stat(filepath.Join(root, "node_modules", ".bin", "buf")); err != nil {
		t.Fatalf("buf is not installed: run `npm ci` at the repository root (the test command does): %v", err)
	}
	out := t.TempDir()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "gen.sh"), out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/gen.sh failed: %v\n%s", err, b)
	}
	for _, rel := range generated {
		compareTrees(t, filepath.Join(root, rel), filepath.Join(out, rel), rel)
	}
}

func compareTrees(t *testing.T, committed, fresh, rel string) {
	t.Helper()
	files := map[string]bool{}
	collect := func(base string) {
		_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				r, _ := filepath.Rel(base, p)
				files[r] = true
			}
			return nil
		})
	}
	collect(committed)
	collect(fresh)
	for f := range files {
		a, errA := os.ReadFile(filepath.Join(committed, f))
		b, errB := os.ReadFile(filepath.Join(fresh, f))
		name := filepath.Join(rel, f)
		switch {
		case errA != nil:
			t.Errorf("%s is generated but not committed; run scripts/gen.sh", name)
		case errB != nil:
			t.Errorf("%s is committed but no longer generated; run scripts/gen.sh", name)
		case !bytes.Equal(a, b):
			t.Errorf("%s differs from what the protos generate; run scripts/gen.sh", name)
		}
	}
}
