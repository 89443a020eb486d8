//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/convergehq/converge/server/internal/pgtest"
)

// The packages TestMain builds, relative to the module root.
var mainPackages = []string{
	"./server/cmd/converge",
	"./server/cmd/conctl",
	"./sdk-go/examples/leaf",
	"./sdk-go/examples/noop",
	"./sdk-go/examples/landingzone",
	"./server/e2e/testdata/specworker",
	"./server/e2e/testdata/lifecycleworker",
	"./stdworker/cmd/stdworker",
}

// bin holds what TestMain built; it is read-only once tests run.
var bin struct {
	root     string // the module root
	converge string
	conctl   string
	leaf     string
	noop     string
	// landingzone is the composition example's worker.
	landingzone string
	// specworker serves the composition tests' kinds (specKinds).
	specworker string
	// lifecycleworker serves the kind-lifecycle tests' kinds.
	lifecycleworker string
	// stdworker runs the std kinds (the chart's stdworker tier).
	stdworker string
	// sources are the files of this module the binaries are built from.
	sources []string
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Every test skips, saying why; no need for binaries or PostgreSQL.
		os.Exit(m.Run())
	}
	if err := buildBinaries(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// begin starts every test: it skips in -short mode, marks the test
// parallel and records the binaries' sources as inputs of the test.
func begin(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode: it builds and runs the server, conctl and workers")
	}
	t.Parallel()
	recordSources()
}

// binDirPattern names the directories holding built binaries. pgtest.Main
// ends the process with os.Exit, so no code runs after the tests to remove
// the directory: each run leaves an owner file instead, and the next run
// removes the directories of owners that have died.
const (
	binDirPattern = "converge-e2e-*"
	ownerFile     = "owner.pid"
)

func buildBinaries() error {
	goTool, err := goCommand()
	if err != nil {
		return err
	}
	root, err := moduleRoot(goTool)
	if err != nil {
		return err
	}
	sweepBinDirs()
	dir, err := os.MkdirTemp("", binDirPattern)
	if err != nil {
		return fmt.Errorf("binaries directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("binaries directory: %w", err)
	}
	build := exec.Command(goTool, append([]string{"build", "-o", dir + string(filepath.Separator)}, mainPackages...)...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(mainPackages, " "), err, out)
	}
	sources, err := moduleSources(goTool, root)
	if err != nil {
		return err
	}
	bin.root, bin.sources = root, sources
	bin.converge = filepath.Join(dir, "converge")
	bin.conctl = filepath.Join(dir, "conctl")
	bin.leaf = filepath.Join(dir, "leaf")
	bin.noop = filepath.Join(dir, "noop")
	bin.landingzone = filepath.Join(dir, "landingzone")
	bin.specworker = filepath.Join(dir, "specworker")
	bin.lifecycleworker = filepath.Join(dir, "lifecycleworker")
	bin.stdworker = filepath.Join(dir, "stdworker")
	return nil
}

// goCommand finds the go tool: on PATH, else the one that built this test.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the go tool is neither on PATH nor at %s: it is needed to build the binaries under test", p)
	}
	return p, nil
}

func moduleRoot(goTool string) (string, error) {
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside the converge module")
	}
	return filepath.Dir(gomod), nil
}

// listedPackage is the part of `go list -json` output moduleSources reads.
type listedPackage struct {
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	EmbedFiles []string
	Module     *struct {
		Main  bool
		GoMod string
	}
}

// moduleSources lists the files of this module that the binaries are built
// from: the Go files and embedded files of every dependency in the main
// module, plus go.work and the go.mod and go.sum of each workspace module they come
// from (which pin everything else).
func moduleSources(goTool, root string) ([]string, error) {
	cmd := exec.Command(goTool, append([]string{"list", "-deps", "-json"}, mainPackages...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps: %w\n%s", err, stderr.Bytes())
	}
	files := []string{filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"), filepath.Join(root, "go.work"), filepath.Join(root, "go.work.sum")}
	mods := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list -deps: decoding its output: %w", err)
		}
		if p.Module == nil || !p.Module.Main {
			continue
		}
		if gm := p.Module.GoMod; gm != "" && !mods[gm] {
			mods[gm] = true
			files = append(files, gm, strings.TrimSuffix(gm, ".mod")+".sum")
		}
		for _, group := range [][]string{p.GoFiles, p.CgoFiles, p.EmbedFiles} {
			for _, f := range group {
				files = append(files, filepath.Join(p.Dir, f))
			}
		}
	}
	return files, nil
}

// sweepBinDirs removes binaries directories whose owning test process has
// exited.
func sweepBinDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPattern))
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

var recordOnce sync.Once

// recordSources makes the binaries' sources inputs of the test run: it
// stats each of them once. `go test` caches a passing result keyed by the
// test binary and the files the tests touched, and this test binary does
// not link the server, so without this a cached pass would outlive a
// change to the code under test. Stats in TestMain would not count: the
// log of inputs starts with the first test.
func recordSources() {
	recordOnce.Do(func() {
		for _, f := range bin.sources {
			_, _ = os.Stat(f)
		}
	})
}

// repoFile returns the path of a file in the repository, for handing to a
// binary, and makes it an input of the test run as recordSources does.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(bin.root, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("repository file %s: %v", rel, err)
	}
	return p
}
