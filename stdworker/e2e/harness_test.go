//go:build unix

// Package e2e runs stdworker end to end: TestMain builds the real converge,
// conctl and stdworker binaries, and each test starts its own `converge dev`
// (a throwaway PostgreSQL included), a stdworker, and drives them with
// conctl and the control API.
//
// The harness, for every provider's tests:
//
//	func TestX(t *testing.T) {
//		d := startDev(t)                       // begin(t) included
//		d.kindsApply(t)                        // stdworker kinds apply
//		d.apply(t, manifestYAML)               // conctl apply -f -
//		w := d.stdworker(t, "--config", cfg)   // killed when the test ends
//		r := d.waitPhase(t, "std.shell", "hello", client.PhaseReady, time.Minute)
//		...
//	}
//
// and for a demo, runExample(t, "stdworker/examples/<provider>/run.sh") runs
// its run.sh against the built binaries and checks it leaves nothing
// running. readPid and waitGone check that a program's processes died.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// mainPackages are built once by TestMain, relative to the module root.
var mainPackages = []string{"./server/cmd/converge", "./server/cmd/conctl", "./stdworker/cmd/stdworker",
	"./stdworker/cmd/stdworker-bench"}

// bin holds what TestMain built; read-only once tests run.
var bin struct {
	root      string // the module root
	dir       string // where the binaries are
	converge  string
	conctl    string
	stdworker string
	bench     string // stdworker-bench
}

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test skips, saying why
	}
	if err := build(); err != nil {
		fmt.Fprintf(os.Stderr, "stdworker e2e: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(bin.dir)
	os.Exit(code)
}

// begin starts every test: it skips in -short mode and marks the test
// parallel.
func begin(t *testing.T) {
	t.Helper()
	skipShort(t)
	t.Parallel()
}

// skipShort skips the test in -short mode, where TestMain builds nothing.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode: it builds and runs converge, conctl and stdworker")
	}
}

func build() error {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return errors.New("go env GOMOD: not inside the converge module")
	}
	bin.root = filepath.Dir(gomod)
	if bin.dir, err = os.MkdirTemp("", "stdworker-e2e-*"); err != nil {
		return err
	}
	cmd := exec.Command(goTool, append([]string{"build", "-o", bin.dir + string(filepath.Separator)}, mainPackages...)...)
	cmd.Dir = bin.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(mainPackages, " "), err, out)
	}
	bin.converge = filepath.Join(bin.dir, "converge")
	bin.conctl = filepath.Join(bin.dir, "conctl")
	bin.stdworker = filepath.Join(bin.dir, "stdworker")
	bin.bench = filepath.Join(bin.dir, "stdworker-bench")
	return nil
}

// repoPath returns the absolute path of a file in the repository.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	skipShort(t) // a test may look up its files before begin
	p := filepath.Join(bin.root, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("repository file %s: %v", rel, err)
	}
	return p
}

// dev is a `converge dev` server of one test.
type dev struct {
	url  string
	api  *client.Client
	proc *proc
}

// devTimings make failed tasks retry and dead workers' tasks move within
// seconds.
var devTimings = []string{"--lease", "3s", "--heartbeat", "500ms", "--poll", "200ms",
	"--retry-base", "100ms", "--retry-max", "1s"}

// startDev calls begin(t), runs `converge dev` on a free port with fast
// timings (extra flags after them win) and returns once it is ready. It is
// stopped, and its PostgreSQL removed, when the test ends.
func startDev(t *testing.T, extra ...string) *dev {
	t.Helper()
	begin(t)
	addr := freeAddr(t)
	args := append(append([]string{"dev", "--listen", addr}, devTimings...), extra...)
	d := &dev{url: "http://" + addr, api: client.New("http://" + addr)}
	d.proc = startProc(t, "converge dev", bin.converge, args...)
	d.proc.stopSignal = true // SIGTERM first, so it removes its PostgreSQL
	deadline := time.Now().Add(60 * time.Second)
	for !d.ready() {
		if d.proc.exited() {
			t.Fatalf("converge dev exited before it was ready:\n%s", d.proc.output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("converge dev not ready after 60s:\n%s", d.proc.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return d
}

func (d *dev) ready() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stdworker starts stdworker against d with args, and a state directory of
// the test's unless args give --state-dir. It is killed when the test ends.
func (d *dev) stdworker(t *testing.T, args ...string) *proc {
	t.Helper()
	full := append([]string{"--server", d.url}, args...)
	if !containsFlag(args, "--state-dir") {
		full = append(full, "--state-dir", t.TempDir())
	}
	return startProc(t, "stdworker "+strings.Join(args, " "), bin.stdworker, full...)
}

// kindsApply runs `stdworker kinds apply` against d and fails the test if it
// fails.
func (d *dev) kindsApply(t *testing.T) string {
	t.Helper()
	res := run(t, "", bin.stdworker, "kinds", "apply", "--server", d.url)
	if res.code != 0 {
		t.Fatalf("%s", res)
	}
	return res.stdout
}

// conctl runs conctl against d with stdin and args.
func (d *dev) conctl(t *testing.T, stdin string, args ...string) cmdResult {
	t.Helper()
	return run(t, stdin, bin.conctl, append([]string{"--server", d.url}, args...)...)
}

// apply applies YAML documents (kinds, configs, resources) with conctl and
// fails the test if conctl fails.
func (d *dev) apply(t *testing.T, yaml string) {
	t.Helper()
	if res := d.conctl(t, yaml, "apply", "-f", "-"); res.code != 0 {
		t.Fatalf("%s", res)
	}
}

// waitPhase waits for default/kind/name to reach phase and returns it; it
// fails the test, showing the resource, if that takes longer than timeout.
func (d *dev) waitPhase(t *testing.T, kind, name, phase string, timeout time.Duration) *convergev1.Resource {
	t.Helper()
	return d.waitFor(t, kind, name, "phase "+phase, timeout, func(r *convergev1.Resource) bool { return r.GetPhase() == phase })
}

// waitFor waits for default/kind/name to satisfy done (described by what
// for the failure message) and returns it.
func (d *dev) waitFor(t *testing.T, kind, name, what string, timeout time.Duration, done func(*convergev1.Resource) bool) *convergev1.Resource {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	r, err := d.api.WaitFor(ctx, "", kind, name, done, client.WithPollInterval(500*time.Millisecond))
	if err != nil {
		t.Fatalf("%s/%s did not reach %s within %s: %v\nlast seen:\n%s", kind, name, what, timeout, err, show(r))
	}
	return r
}

// get reads default/kind/name, failing the test if it cannot.
func (d *dev) get(t *testing.T, kind, name string) *convergev1.Resource {
	t.Helper()
	resp, err := d.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: kind, Name: name})
	if err != nil {
		t.Fatalf("get %s/%s: %v", kind, name, err)
	}
	return resp.GetResource()
}

// show renders a resource for a failure message.
func show(r *convergev1.Resource) string {
	if r == nil {
		return "(none)"
	}
	raw, err := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}.Marshal(r)
	if err != nil {
		return err.Error()
	}
	return string(raw)
}

// statusOf decodes a resource's status into a map.
func statusOf(t *testing.T, r *convergev1.Resource) map[string]any {
	t.Helper()
	raw, err := protojson.Marshal(r.GetStatus())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// writeFile writes content to dir/name with mode and returns its path.
func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func containsFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}
