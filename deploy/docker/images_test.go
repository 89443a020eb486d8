package docker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConvergeImage(t *testing.T) {
	checkImage(t, "converge.Dockerfile", "converge")
}

func TestStdworkerImage(t *testing.T) {
	checkImage(t, "stdworker.Dockerfile", "stdworker")
}

func checkImage(t *testing.T, dockerfile, binary string) {
	root := repoRoot(t)
	ins := parseDockerfile(t, dockerfile)

	wantGo := "GO_VERSION=" + goDirective(t, root)
	if len(ins) == 0 || ins[0].op != "ARG" || ins[0].args != wantGo {
		t.Errorf("%s: first instruction %+v, want ARG %s (go.mod's go directive)", dockerfile, ins[0], wantGo)
	}

	var froms []int
	for i, in := range ins {
		if in.op == "FROM" {
			froms = append(froms, i)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("%s: %d stages, want a build stage and a runtime stage", dockerfile, len(froms))
	}
	if b := ins[froms[0]].args; !strings.HasPrefix(b, "golang:${GO_VERSION}") || !strings.HasSuffix(b, " AS build") {
		t.Errorf("%s: build stage FROM %q, want golang:${GO_VERSION}... AS build", dockerfile, b)
	}

	// Build stage: what it copies from the context, and the go build it runs.
	copied := map[string]bool{}
	for _, in := range ins[froms[0]:froms[1]] {
		if in.op != "COPY" {
			continue
		}
		words := strings.Fields(in.args)
		for _, src := range words[:len(words)-1] {
			if _, err := os.Stat(filepath.Join(root, src)); err != nil {
				t.Errorf("%s: COPY %s: not in the build context: %v", dockerfile, src, err)
			}
			copied[strings.TrimSuffix(src, "/")] = true
		}
	}
	checkIgnoreFile(t, dockerfile, copied)
	env, flags, out, pkg := goBuild(t, ins[froms[0]:froms[1]])
	if !contains(env, "CGO_ENABLED=0") || !contains(flags, "-trimpath") {
		t.Errorf("%s: go build env %v flags %v, want CGO_ENABLED=0 and -trimpath", dockerfile, env, flags)
	}
	checkCopiesCover(t, root, dockerfile, pkg, copied)

	// Runtime stage: the binary comes from the build output and runs as a non-root user.
	var user string
	copiesBinary := false
	for _, in := range ins[froms[len(froms)-1]:] {
		switch in.op {
		case "USER":
			user = in.args
		case "COPY":
			copiesBinary = copiesBinary || in.args == "--from=build "+out+" /usr/local/bin/"+binary
		case "ENTRYPOINT":
			if !strings.Contains(in.args, `"/usr/local/bin/`+binary+`"`) {
				t.Errorf("%s: ENTRYPOINT %s does not run /usr/local/bin/%s", dockerfile, in.args, binary)
			}
		}
	}
	if !copiesBinary {
		t.Errorf("%s: runtime stage does not COPY --from=build %s /usr/local/bin/%s", dockerfile, out, binary)
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("%s: runtime USER %q, want a non-root uid", dockerfile, user)
	}

	if testing.Short() {
		t.Logf("skipping the go build of %s in -short mode: it compiles the binary from scratch (-trimpath)", pkg)
		return
	}
	bin := filepath.Join(t.TempDir(), binary)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	args := append(append([]string{"build"}, flags...), "-o", bin, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	// The image has no go.work: build as it does, from go.mod alone.
	cmd.Env = append(append(os.Environ(), "GOWORK=off"), env...)
	if outb, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: go %s: %v\n%s", dockerfile, strings.Join(args, " "), err, outb)
	}
	help := exec.CommandContext(ctx, bin, "--help")
	outb, err := help.CombinedOutput()
	if err != nil || !strings.Contains(string(outb), "Usage:") {
		t.Errorf("%s: built %s --help: %v\n%s", dockerfile, binary, err, outb)
	}
}

// checkCopiesCover fails unless every package of this module that pkg depends on lies under a
// directory the Dockerfile copies, so the image build cannot miss a source directory.
func checkCopiesCover(t *testing.T, root, dockerfile, pkg string, copied map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		if !copied[top] {
			t.Errorf("%s: %s needs %s, but the Dockerfile does not COPY %s", dockerfile, pkg, rel, top)
		}
	}
}

// checkIgnoreFile checks <dockerfile>.dockerignore: it excludes everything, then re-includes
// exactly what the Dockerfile copies, so the build context stays small and complete.
func checkIgnoreFile(t *testing.T, dockerfile string, copied map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(dockerfile + ".dockerignore")
	if err != nil {
		t.Fatalf("%s: %v", dockerfile, err)
	}
	var patterns []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	if len(patterns) == 0 || patterns[0] != "*" {
		t.Errorf("%s.dockerignore: first pattern %v, want * (an allowlist)", dockerfile, patterns)
	}
	included := map[string]bool{}
	for _, p := range patterns {
		if rest, ok := strings.CutPrefix(p, "!"); ok {
			included[rest] = true
		}
	}
	for src := range copied {
		if !includedUnder(included, src) {
			t.Errorf("%s.dockerignore: COPY %s is excluded from the build context (no !%s)", dockerfile, src, src)
		}
	}
	for inc := range included {
		if !copied[inc] && !copiedUnder(copied, inc) {
			t.Errorf("%s.dockerignore: !%s re-includes a path the Dockerfile never copies", dockerfile, inc)
		}
	}
}

// copiedUnder reports whether something below dir is copied.
func copiedUnder(copied map[string]bool, dir string) bool {
	for src := range copied {
		if strings.HasPrefix(src, dir+"/") {
			return true
		}
	}
	return false
}

// includedUnder reports whether path or a directory above it is re-included.
func includedUnder(included map[string]bool, path string) bool {
	for p := path; p != "." && p != "/" && p != ""; p = filepath.Dir(p) {
		if included[p] {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
