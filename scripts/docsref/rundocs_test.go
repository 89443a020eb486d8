//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const (
	runTimeout    = 10 * time.Minute // a block; the first builds the binaries
	outputTimeout = 2 * time.Minute  // a background process showing its output
	stopTimeout   = 30 * time.Second // a process draining after Ctrl-C
	pollInterval  = 100 * time.Millisecond
	// pipeDelay bounds how long a finished run block's output pipe may stay
	// open, held by something the block left in the background.
	pipeDelay = 5 * time.Second
	// pageAddr is the address a page shows for the server, converge dev's
	// default; expected outputs show it where the test's server prints its
	// own.
	pageAddr = "127.0.0.1:7070"
	// skipDBEnv lets the tests that need PostgreSQL skip where it is not
	// installed; the name is server/internal/pgtest's SkipEnv.
	skipDBEnv = "CONVERGE_TEST_SKIP_DB"
)

// runnablePages are the pages whose walkthroughs are run as written. Each
// is self-contained: it starts its own server, and what it applies is all
// the server holds. A page with ownHome runs with HOME set to a new empty
// directory, so its ~/... paths (a reader's new project) start empty and
// outside the repository; the Go and npm caches stay where they are.
var runnablePages = []struct {
	path    string
	ownHome bool
}{
	{path: "docs/getting-started.md"},
	{path: "README.md"},
	{path: "docs/first-provider.md", ownHome: true},
	{path: "docs/changing-safely.md"},
	{path: "docs/publish-first-kind.md", ownHome: true},
}

// TestRunnableDocs runs the marked commands of each runnable page as
// written, in order, from the repository root, against the real server the
// page starts, and checks each marked output (see parseSteps for the
// markers). The one liberty: the server is started with --listen on a free
// port (and CONVERGE_SERVER points every command at it), so the test can
// run beside a developer's own `converge dev` on the default port.
func TestRunnableDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short: runs a real server, PostgreSQL and workers")
	}
	if dir := postgresBinaries(); dir == "" {
		// As for the database tests (server/internal/pgtest): a missing
		// PostgreSQL fails the run unless skipping was asked for, so CI
		// cannot pass without having run the pages.
		const why = "no PostgreSQL server binaries (initdb) on PATH, under /usr/lib/postgresql/*/bin or in CONVERGE_PG_BIN; converge dev needs them (Debian/Ubuntu: apt-get install postgresql)"
		if os.Getenv(skipDBEnv) == "1" {
			t.Skipf("skipped (%s=1): %s", skipDBEnv, why)
		}
		t.Fatalf("%s; set %s=1 to skip this test instead", why, skipDBEnv)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range runnablePages {
		t.Run(page.path, func(t *testing.T) { runPage(t, root, page.path, page.ownHome) })
	}
}

// pageRun is one page being run: its environment, the processes its start
// blocks left running, and the last step's output.
type pageRun struct {
	t     *testing.T
	root  string
	page  string // relative to root, for messages
	addr  string // the server's --listen
	env   []string
	tmp   string              // TMPDIR of run blocks
	state string              // the shell session: its directory and exports
	procs map[string]*process // running, by name
	died  chan *process       // a started process that exited unasked
	last  *stepResult
}

func runPage(t *testing.T, root, page string, ownHome bool) {
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseSteps(string(text))
	if err != nil {
		t.Fatalf("%s: %v", page, err)
	}
	if len(steps) == 0 {
		t.Fatalf("%s: no marked blocks; a runnable page without them tests nothing", page)
	}
	p := &pageRun{
		t: t, root: root, page: page, addr: freeAddr(t),
		tmp: t.TempDir(), state: t.TempDir(), procs: map[string]*process{}, died: make(chan *process, 16),
	}
	p.env = commandEnv(root, p.addr)
	if ownHome {
		p.env = withOwnHome(t, p.env)
	}
	p.setDir(root)
	for _, s := range steps {
		// A trail for -v and for failures: which blocks ran before.
		t.Logf("%s:%d: %s", page, s.line, strings.TrimSpace(s.kind+" "+s.name))
		switch s.kind {
		case "run":
			p.last = p.run(s)
		case "start":
			if s.name == "server" {
				s.body += " --listen " + p.addr
			}
			p.last = p.start(s)
		case "stop":
			p.stop(s)
			p.last = nil
		case "file":
			p.writeFile(s)
		case "output":
			if p.last == nil {
				p.fatalf(s.line, "an output block with no command before it (or only a stop)")
			}
			p.expect(p.last, s)
		}
	}
}

func (p *pageRun) fatalf(line int, format string, args ...any) {
	p.t.Helper()
	p.t.Fatalf("%s:%d: "+format, append([]any{p.page, line}, args...)...)
}

// diedf fails the page for a started process that exited while the block
// at line was running or awaited: the block would otherwise wait on it
// until its own timeout, naming the wrong culprit.
func (p *pageRun) diedf(line int, pr *process) {
	p.t.Helper()
	p.fatalf(line, "%s (started at line %d) exited while this block ran\n--- %s's output\n%s",
		pr.step.name, pr.step.line, pr.step.name, pr.out.String())
}

// stepResult is what a run block printed, or a background process's
// output so far.
type stepResult struct {
	step step
	out  func() string
	wait time.Duration // how long the output may take to appear
	done func() bool   // whether a background process has exited
	proc *process      // the background process, for a start block
}

func (p *pageRun) expect(r *stepResult, want step) {
	p.t.Helper()
	// The page shows converge dev's default address; the test's server
	// listens elsewhere and prints its own.
	pattern := strings.ReplaceAll(want.body, pageAddr, p.addr)
	deadline := time.Now().Add(r.wait)
	for {
		err := matchOutput(pattern, r.out())
		if err == nil {
			return
		}
		if time.Now().After(deadline) || (r.done != nil && r.done()) {
			p.fatalf(want.line, "the output of the block at line %d does not match the page: %v\n--- command\n%s\n--- output\n%s",
				r.step.line, err, r.step.body, r.out())
		}
		select {
		case pr := <-p.died:
			if pr != r.proc {
				p.diedf(want.line, pr)
			}
			// The process whose output this is: the next round reports
			// the mismatch with all it printed.
		case <-time.After(pollInterval):
		}
	}
}

// The blocks of a page share one shell session, as a reader's terminal
// does: a block starts in the directory the last one ended in, with the
// variables it exported. Each block's shell saves both on exit.
const (
	sessionDir = "dir"
	sessionEnv = "env"
)

func (p *pageRun) setDir(dir string) {
	if err := os.WriteFile(filepath.Join(p.state, sessionDir), []byte(dir), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// dir is the session's current directory.
func (p *pageRun) dir() string {
	b, err := os.ReadFile(filepath.Join(p.state, sessionDir))
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// inSession wraps a block's script so that it runs in the session and
// records where it left it.
func (p *pageRun) inSession(body string) string {
	env := filepath.Join(p.state, sessionEnv)
	dir := filepath.Join(p.state, sessionDir)
	return fmt.Sprintf("if [ -f %[1]q ]; then . %[1]q; fi\ncd \"$(cat %[2]q)\"\ntrap 'pwd > %[2]q; export -p > %[1]q' EXIT\n%[3]s", env, dir, body)
}

// writeFile creates the file a file block shows, relative to the
// session's directory.
func (p *pageRun) writeFile(s step) {
	p.t.Helper()
	path := s.name
	if strings.HasPrefix(path, "~/") {
		path = filepath.Join(p.home(), path[2:])
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir(), path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.fatalf(s.line, "%v", err)
	}
	if err := os.WriteFile(path, []byte(s.body+"\n"), 0o644); err != nil {
		p.fatalf(s.line, "%v", err)
	}
}

func (p *pageRun) home() string {
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			return v
		}
	}
	return os.Getenv("HOME")
}

// run runs a block with bash -e, in its own process group so that a
// timeout or a dying worker it depends on can stop it with everything it
// started.
func (p *pageRun) run(s step) *stepResult {
	p.t.Helper()
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", p.inSession(s.body))
	cmd.Dir = p.root
	// A private TMPDIR, removed with the test, so a page's mktemp leaves
	// nothing behind. Started processes keep the system's: converge dev's
	// PostgreSQL, run as the postgres user under root, must be able to
	// enter its data directory's parent, which t.TempDir's is not.
	cmd.Env = append(append([]string(nil), p.env...), "TMPDIR="+p.tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = pipeDelay
	if err := cmd.Start(); err != nil {
		p.fatalf(s.line, "%v\n%s", err, s.body)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	kill := func() {
		// ESRCH when the group is already gone is the normal case.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	timeout := time.NewTimer(runTimeout)
	defer timeout.Stop()
	var err error
	select {
	case err = <-waited:
		// Whatever the block left in the background would outlive the
		// test otherwise.
		kill()
	case pr := <-p.died:
		kill()
		<-waited
		p.fatalf(s.line, "%s (started at line %d) exited while this block ran; killed the block\n--- command\n%s\n--- output\n%s\n--- %s's output\n%s",
			pr.step.name, pr.step.line, s.body, out.String(), pr.step.name, pr.out.String())
	case <-timeout.C:
		kill()
		<-waited
		p.fatalf(s.line, "still running after %s; killed\n--- command\n%s\n--- output\n%s", runTimeout, s.body, out.String())
	}
	var exit *exec.ExitError
	switch {
	case err != nil && !errors.As(err, &exit):
		p.fatalf(s.line, "%v\n--- command\n%s\n--- output\n%s", err, s.body, out.String())
	case s.fails && err == nil:
		p.fatalf(s.line, "the page says this fails, but it exited 0\n--- command\n%s\n--- output\n%s", s.body, out.String())
	case !s.fails && err != nil:
		p.fatalf(s.line, "%v\n--- command\n%s\n--- output\n%s", err, s.body, out.String())
	}
	text := out.String()
	return &stepResult{step: s, out: func() string { return text }}
}

// process is a command a start block left running.
type process struct {
	step     step
	cmd      *exec.Cmd
	out      lockedBuffer
	exited   chan struct{}
	stopping atomic.Bool // set before the test signals it, so its exit is expected
}

func (pr *process) hasExited() bool {
	select {
	case <-pr.exited:
		return true
	default:
		return false
	}
}

// interrupt stops the process the way Ctrl-C in its terminal would, with
// SIGINT to its process group, and reports whether it exited in time;
// if not, it is killed.
func (pr *process) interrupt() bool {
	pr.stopping.Store(true)
	_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-pr.exited:
		return true
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
		<-pr.exited
		return false
	}
}

// start starts a background command in its own process group, as a
// terminal would. It is stopped by a stop marker, or at the end of the
// test, latest first, so workers drain while the server still runs.
func (p *pageRun) start(s step) *stepResult {
	p.t.Helper()
	if pr, ok := p.procs[s.name]; ok {
		p.fatalf(s.line, "start %s: %s (started at line %d) is still running; stop it first (<!-- test: stop %s -->)",
			s.name, s.name, pr.step.line, s.name)
	}
	pr := &process{step: s, exited: make(chan struct{})}
	// The session's directory and exports, without its exit trap: the
	// process replaces the shell. TMPDIR stays the system's (see run).
	env := filepath.Join(p.state, sessionEnv)
	tmpdir := "unset TMPDIR"
	if v, ok := os.LookupEnv("TMPDIR"); ok {
		tmpdir = fmt.Sprintf("export TMPDIR=%q", v)
	}
	script := fmt.Sprintf("if [ -f %[1]q ]; then . %[1]q; fi\n%[2]s\nexec %[3]s", env, tmpdir, strings.TrimSpace(s.body))
	pr.cmd = exec.Command("bash", "-c", script)
	pr.cmd.Dir, pr.cmd.Env = p.dir(), p.env
	pr.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr.cmd.Stdout, pr.cmd.Stderr = &pr.out, &pr.out
	if err := pr.cmd.Start(); err != nil {
		p.fatalf(s.line, "start %s: %v", s.name, err)
	}
	go func() {
		_ = pr.cmd.Wait()
		close(pr.exited)
		if !pr.stopping.Load() {
			p.died <- pr // buffered: one per process at most
		}
	}()
	p.procs[s.name] = pr
	p.t.Cleanup(func() {
		if pr.hasExited() {
			return
		}
		if !pr.interrupt() {
			p.t.Errorf("%s:%d: %s did not stop within %s of SIGINT; killed\n%s", p.page, s.line, s.name, stopTimeout, pr.out.String())
		}
	})
	return &stepResult{step: s, out: pr.out.String, wait: outputTimeout, done: pr.hasExited, proc: pr}
}

// stop is the reader's Ctrl-C in the terminal of a started process.
func (p *pageRun) stop(s step) {
	p.t.Helper()
	pr, ok := p.procs[s.name]
	if !ok {
		p.fatalf(s.line, "stop %s: no process of that name is running", s.name)
	}
	delete(p.procs, s.name)
	if pr.hasExited() {
		p.diedf(s.line, pr)
	}
	if !pr.interrupt() {
		p.fatalf(s.line, "%s did not stop within %s of SIGINT; killed\n%s", s.name, stopTimeout, pr.out.String())
	}
}

// commandEnv is the test's environment with the page's PATH, the server's
// address, and no other CONVERGE_* setting that could point elsewhere.
func commandEnv(root, addr string) []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "PATH="):
			env = append(env, "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+kv[len("PATH="):])
		case strings.HasPrefix(kv, "CONVERGE_") && !strings.HasPrefix(kv, "CONVERGE_PG_BIN="):
		default:
			env = append(env, kv)
		}
	}
	return append(env, "CONVERGE_SERVER=http://"+addr)
}

// withOwnHome points HOME at a new empty directory, keeping the Go and npm
// caches where they were so the page does not download everything again.
func withOwnHome(t *testing.T, env []string) []string {
	t.Helper()
	keep := map[string]string{}
	for _, v := range []string{"GOPATH", "GOMODCACHE", "GOCACHE"} {
		out, err := exec.Command("go", "env", v).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", v, err)
		}
		keep[v] = strings.TrimSpace(string(out))
	}
	npmCache, err := exec.Command("npm", "config", "get", "cache").Output()
	if err != nil {
		t.Fatalf("npm config get cache: %v", err)
	}
	keep["npm_config_cache"] = strings.TrimSpace(string(npmCache))
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := keep[k]; ok || k == "HOME" {
			continue
		}
		out = append(out, kv)
	}
	out = append(out, "HOME="+t.TempDir())
	for k, v := range keep {
		out = append(out, k+"="+v)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// postgresBinaries finds initdb where converge dev looks for it.
func postgresBinaries() string {
	if dir := os.Getenv("CONVERGE_PG_BIN"); dir != "" {
		return dir
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return ""
	}
	return filepath.Dir(dirs[len(dirs)-1])
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
