package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestUIScreenshotsAreTheBrowserTests holds docs/ui.md's images to what
// the browser test takes: each image the page shows is in docs/public/ui
// and is the name of a shot in server/internal/ui/e2e, so
// `scripts/test-ui.sh --update-docs` can refresh every one of them.
func TestUIScreenshotsAreTheBrowserTests(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "ui.md"))
	if err != nil {
		t.Fatal(err)
	}
	suite, err := os.ReadFile(filepath.Join(root, "server", "internal", "ui", "e2e", "ui.test.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	taken := map[string]bool{}
	for _, m := range regexp.MustCompile(`shot\('([A-Za-z0-9_-]+)'\)`).FindAllSubmatch(suite, -1) {
		taken[string(m[1])] = true
	}
	shown := regexp.MustCompile(`\]\(/ui/([A-Za-z0-9_-]+)\.png\)`).FindAllSubmatch(page, -1)
	if len(shown) < 4 {
		t.Fatalf("docs/ui.md shows %d screenshots, want at least 4 (of %d the browser test takes)", len(shown), len(taken))
	}
	for _, m := range shown {
		name := string(m[1])
		if !taken[name] {
			t.Errorf("docs/ui.md shows /ui/%s.png, but the browser test takes no shot %q", name, name)
		}
		if fi, err := os.Stat(filepath.Join(root, "docs", "public", "ui", name+".png")); err != nil || fi.Size() == 0 {
			t.Errorf("docs/ui.md shows /ui/%s.png, which docs/public/ui lacks (scripts/test-ui.sh --update-docs): %v", name, err)
		}
	}
}
