package converge_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxWorkerModules bounds the module graph of a worker that depends on the
// SDK alone: connect, protobuf, protovalidate and what they require. The
// SDK used to be part of the server's module, and a 50-line worker then
// carried 115 modules (pgx, goose, cobra, terraform-exec...) into its
// users' version selection.
const maxWorkerModules = 35

// serverOnly are modules only the server needs; none may reach a worker.
var serverOnly = []string{
	"github.com/convergehq/converge ",
	"github.com/jackc/pgx",
	"github.com/pressly/goose",
	"github.com/spf13/cobra",
	"github.com/hashicorp/terraform-exec",
	"connectrpc.com/vanguard",
	"github.com/getkin/kin-openapi",
	"helm.sh/helm",
	"github.com/prometheus/client_golang",
	// Tracing lives in the otelconverge module, for workers that want it.
	"go.opentelemetry.io/",
}

// TestFreshModuleGraph builds a worker in a new module that requires the
// SDK (replaced by this directory, as until it is published) and counts
// the modules in its graph.
func TestFreshModuleGraph(t *testing.T) {
	sdk, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "freshmodule", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/worker\n\ngo 1.26\n\nrequire github.com/convergehq/converge/sdk-go v0.0.0\n\nreplace github.com/convergehq/converge/sdk-go => " + sdk + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// A fresh module outside any workspace, as a user's is.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	goCmd("build", "-o", os.DevNull, ".")
	mods := strings.Split(strings.TrimSpace(goCmd("list", "-m", "all")), "\n")
	t.Logf("a worker's module graph: %d modules", len(mods))
	if len(mods) > maxWorkerModules {
		t.Errorf("a worker's module graph has %d modules, want at most %d:\n%s", len(mods), maxWorkerModules, strings.Join(mods, "\n"))
	}
	for _, m := range mods {
		for _, s := range serverOnly {
			if strings.HasPrefix(m+" ", s) {
				t.Errorf("a worker's module graph holds %s, which only the server needs", m)
			}
		}
	}
}
