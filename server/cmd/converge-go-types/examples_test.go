package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const generateDirective = "//go:generate go run github.com/convergehq/converge/server/cmd/converge-go-types "

// TestCommittedOutputIsCurrent: every file a //go:generate line in the
// repository's Go examples makes with this command is what the command
// makes of the manifests now.
func TestCommittedOutputIsCurrent(t *testing.T) {
	found := 0
	for _, root := range []string{"sdk-go/examples", "stdworker/examples"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, root), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(src), "\n") {
				rest, ok := strings.CutPrefix(line, generateDirective)
				if !ok {
					continue
				}
				found++
				dir := filepath.Dir(path)
				args := strings.Fields(rest)
				c, err := parseArgs(args)
				if err != nil || c.out == "" {
					t.Errorf("%s: %q: want -o FILE (%v)", path, line, err)
					continue
				}
				got := generateIn(t, dir, args)
				want, err := os.ReadFile(filepath.Join(dir, c.out))
				if err != nil {
					t.Errorf("%s: %v", path, err)
					continue
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s is stale; run go generate ./%s\n%s", filepath.Join(dir, c.out), root, diff(string(want), string(got)))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found == 0 {
		t.Fatal("no //go:generate line runs converge-go-types; the leaf example should")
	}
}
