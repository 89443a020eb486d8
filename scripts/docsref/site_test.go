package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestSiteBuilds builds the documentation site the way scripts/docs.sh
// does, into a temporary directory, so `go test ./...` (and so CI) fails
// on a dead page link, a link to a repository file that does not exist,
// or a #fragment that no heading has.
func TestSiteBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: builds the whole site with VitePress (about a minute)")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	vitepress := filepath.Join(root, "node_modules", ".bin", "vitepress")
	if _, err := os.Stat(vitepress); err != nil {
		t.Skipf("skipped: %s is missing; run `npm ci` at the repository root (scripts/test.sh does)", vitepress)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("skipped: node is not on PATH; the site is built with VitePress on Node.js")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{vitepress, "build", "docs", "--outDir", out},
		{node, filepath.Join("docs", ".vitepress", "check-anchors.mjs"), out},
	} {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", filepath.Base(args[0]), err, b)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "getting-started.html")); err != nil {
		t.Fatalf("the built site has no getting-started.html: %v", err)
	}
}
