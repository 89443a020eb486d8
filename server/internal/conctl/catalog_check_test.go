package conctl_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// catalogTestdata is the catalog package's corpus of catalogs.
const catalogTestdata = "../catalog/testdata"

const noBaseNote = "note: stability (C6) not checked: give --base GIT_REF to compare with a base\n"

// TestCatalogCheckNeedsNoServer runs check with a server URL setup would
// refuse: check must not need one.
func TestCatalogCheckNeedsNoServer(t *testing.T) {
	r := run(testContext(t), "not a url", "", "catalog", "check", filepath.Join(catalogTestdata, "good", "catalog"))
	if r.code != 0 || r.stdout != "catalog ok: 2 teams, 4 kinds, 5 versions, 3 examples\n" || r.stderr != noBaseNote {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestCatalogCheckProblems(t *testing.T) {
	dir := filepath.Join(catalogTestdata, "version-gap", "catalog")
	r := run(testContext(t), "not a url", "", "catalog", "check", dir)
	file := func(name string) string { return filepath.Join(dir, "acme", "web", name) }
	want := file("v02.yaml") + ": not a version file name: v<N>.yaml with N = 1, 2, 3 ... (no leading zeros) (C7)\n" +
		file("v3.yaml") + ": v2.yaml is missing: versions are contiguous from v1 (C7)\n" +
		file("v3.yaml") + ":3: kind_version: is 2 but the file is v3.yaml (C7)\n"
	if r.code != 1 || r.stdout != want || r.stderr != noBaseNote+"error: 3 problems in 2 files\n" {
		t.Fatalf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
}

func TestCatalogCheckJSON(t *testing.T) {
	dir := filepath.Join(catalogTestdata, "owner-mismatch", "catalog")
	r := run(testContext(t), "not a url", "", "catalog", "check", dir, "-o", "json")
	var got []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if r.code != 1 || len(got) != 1 || got[0]["file"] != filepath.Join(dir, "acme", "web", "v1.yaml") ||
		got[0]["line"] != 5.0 || got[0]["path"] != "owner" || got[0]["rule"] != "C10" {
		t.Fatalf("exit %d, problems %v, stderr:\n%s", r.code, got, r.stderr)
	}

	r = run(testContext(t), "not a url", "", "catalog", "check", filepath.Join(catalogTestdata, "good", "catalog"), "-o", "json")
	if r.code != 0 || r.stdout != "[]\n" {
		t.Fatalf("good catalog: exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestCatalogCheckUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"catalog", "check", "a", "b"}, "error: conctl catalog check takes at most one DIR, got [\"a\" \"b\"]\nRun 'conctl catalog check --help' for usage.\n"},
		{[]string{"catalog", "check", "-o", "wide"}, "error: --output: \"wide\" is not one of table, json, yaml\nRun 'conctl catalog check --help' for usage.\n"},
		{[]string{"catalog", "check", "testdata/no-such-catalog"}, "error: catalog testdata/no-such-catalog: no such file or directory\n"},
	} {
		r := run(testContext(t), "not a url", "", tc.args...)
		if r.code != 1 || r.stderr != tc.want {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant:\n%s", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestCatalogCheckBase checks against a git history: a breaking change to
// a committed version is a problem, and --base fails clearly outside a
// work tree or with an unknown ref.
func TestCatalogCheckBase(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipping: git is not installed, and --base reads the base with git")
	}
	repo := t.TempDir()
	gitRun := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=test", "-c", "user.email=test@example.com",
			"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest := func(maximum string) string {
		return "type: manifest\nkind: web\nkind_version: 1\nowner: acme\nspec_schema:\n  type: object\n  properties:\n" +
			"    replicas: {type: integer, maximum: " + maximum + "}\nreactions:\n  - {name: r, trigger: specChange, emits: [status]}\n"
	}
	gitRun("init", "-q")
	write("kinds/acme/OWNERS", "@alice\n")
	write("kinds/acme/web/README.md", "# web\n")
	write("kinds/acme/web/v1.yaml", manifest("10"))
	gitRun("add", ".")
	gitRun("commit", "-q", "-m", "web v1")
	write("kinds/acme/web/v1.yaml", manifest("5"))

	dir := filepath.Join(repo, "kinds")
	r := run(testContext(t), "not a url", "", "catalog", "check", dir, "--base", "main")
	want := filepath.Join(dir, "acme", "web", "v1.yaml") + ":8: spec_schema: breaking change from the base: at /replicas: narrowed: maximum was 10, now 5; a breaking change needs a new version (v2) (C6)\n"
	if r.code != 1 || r.stdout != want || r.stderr != "error: 1 problem in 1 file\n" {
		t.Fatalf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}

	r = run(testContext(t), "not a url", "", "catalog", "check", dir, "--base", "no-such-branch")
	if r.code != 1 || r.stderr != "error: --base: \"no-such-branch\" is not a commit, branch or tag of this repository\n" {
		t.Fatalf("unknown ref: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	outside := t.TempDir()
	write2 := filepath.Join(outside, "acme")
	if err := os.MkdirAll(write2, 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(testContext(t), "not a url", "", "catalog", "check", outside, "--base", "main")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: --base: "+outside+" is not in a git work tree: git rev-parse: fatal: not a git repository") {
		t.Fatalf("outside a work tree: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
