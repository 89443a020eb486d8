package catalog_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/catalog"
)

var update = flag.Bool("update", false, "rewrite the want.txt files of testdata")

// checkFixture checks testdata/<name>/catalog against testdata/<name>/base
// (when there is one) and returns the problems, one a line.
func checkFixture(t *testing.T, name string) string {
	t.Helper()
	fsys := os.DirFS(filepath.Join("testdata", name))
	head, err := catalog.Load(fsys, "catalog")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var base *catalog.Catalog
	if _, err := os.Stat(filepath.Join("testdata", name, "base")); err == nil {
		if base, err = catalog.Load(os.DirFS(filepath.Join("testdata", name, "base")), "catalog"); err != nil {
			t.Fatalf("Load base: %v", err)
		}
	}
	var b strings.Builder
	for _, p := range head.Check(context.Background(), base) {
		b.WriteString(p.String())
		b.WriteString("\n")
	}
	return b.String()
}

func TestGoodCatalog(t *testing.T) {
	if got := checkFixture(t, "good"); got != "" {
		t.Fatalf("problems in a good catalog:\n%s", got)
	}
}

// TestFixtures checks one broken catalog per rule against the exact
// problems in its want.txt (go test -update rewrites them).
func TestFixtures(t *testing.T) {
	for _, name := range []string{
		"manifest-illegal", // C1, C2
		"example-invalid",  // C3
		"cel-typo",         // C4
		"graph-cycle",      // C4
		"bundle",           // C5
		"breaking",         // C6
		"removed",          // C6
		"version-gap",      // C7
		"missing-owners",   // C8
		"two-teams",        // C9
		"owner-mismatch",   // C10
		"placement",        // C11
		"conversion",       // C12
		"secret-default",   // C1 (M27)
	} {
		t.Run(name, func(t *testing.T) {
			got := checkFixture(t, name)
			wantFile := filepath.Join("testdata", name, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
