//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// lifecycleTimeout bounds how long the lifecycle tests wait for a state
// that normally takes well under a second.
const lifecycleTimeout = 20 * time.Second

// lifecycle is one kind-lifecycle test's world: a server on a database of
// its own and a lifecycleworker (testdata/lifecycleworker) recording what
// it saw.
type lifecycle struct {
	t          *testing.T
	db         *pgtest.DB
	srv        *server
	worker     *proc
	record     string // the worker's -record file
	driftDir   string // the worker's -drift-dir
	objectsDir string // the worker's -objects-dir
}

// startLifecycle starts the server, with extra flags, and the worker.
func startLifecycle(t *testing.T, serverFlags ...string) *lifecycle {
	t.Helper()
	dir := t.TempDir()
	l := &lifecycle{t: t, db: pgtest.New(t), record: filepath.Join(dir, "records.jsonl"), driftDir: filepath.Join(dir, "drift"),
		objectsDir: filepath.Join(dir, "objects")}
	for _, d := range []string{l.driftDir, l.objectsDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l.srv = startServerWith(t, l.db.URL, fast, serverFlags...)
	l.worker = startProc(t, "lifecycleworker", bin.lifecycleworker,
		"-server", l.srv.url, "-record", l.record, "-drift-dir", l.driftDir, "-objects-dir", l.objectsDir)
	// Subscribed before any kind exists: its readiness reaches the server
	// before a task of a kind it is not ready for could be dispatched.
	waitOutput(t, l.worker, "worker subscribed", lifecycleTimeout)
	return l
}

// startServerWith is startServer with extra `converge serve` flags. The
// server it returns must not be restarted: start would drop the flags.
func startServerWith(t *testing.T, dbURL string, tm timings, extra ...string) *server {
	t.Helper()
	s := &server{t: t, dbURL: dbURL, timing: tm, addr: freeAddr(t), starts: 1}
	s.url = "http://" + s.addr
	s.api = client.New(s.url)
	args := append([]string{"serve", "--database-url", dbURL, "--listen", s.addr,
		"--lease", tm.lease.String(), "--heartbeat", tm.heartbeat.String(), "--poll", tm.poll.String(),
		"--retry-base", tm.retryBase.String(), "--retry-max", tm.retryMax.String()}, extra...)
	s.proc = startProc(t, "converge serve", bin.converge, args...)
	s.waitReady()
	return s
}

// ctl runs conctl with args and no input.
func (l *lifecycle) ctl(args ...string) ctlResult {
	l.t.Helper()
	return conctl(l.t, l.srv, "", args...)
}

// mustCtl runs conctl and fails the test unless it exits 0.
func (l *lifecycle) mustCtl(args ...string) ctlResult {
	l.t.Helper()
	res := l.ctl(args...)
	if res.code != 0 {
		l.t.Fatalf("want exit 0:\n%s", res)
	}
	return res
}

// apply runs `conctl apply -f -` with docs (YAML documents) on stdin.
func (l *lifecycle) apply(docs string, args ...string) ctlResult {
	l.t.Helper()
	return conctl(l.t, l.srv, docs, append([]string{"apply", "-f", "-"}, args...)...)
}

// mustApply applies docs and fails the test unless conctl exits 0 having
// printed every one of want, e.g. "kind widget/v1 created".
func (l *lifecycle) mustApply(docs string, want ...string) ctlResult {
	l.t.Helper()
	res := l.apply(docs)
	if res.code != 0 {
		l.t.Fatalf("applying\n%s\nwant exit 0:\n%s", docs, res)
	}
	for _, w := range want {
		if !strings.Contains(res.stdout, w) {
			l.t.Fatalf("applying\n%s\nwant %q in its output:\n%s", docs, w, res)
		}
	}
	return res
}

// get reads a resource with `conctl get resource KIND/NAME -o json`.
func (l *lifecycle) get(ref string) *convergev1.Resource {
	l.t.Helper()
	res := l.mustCtl("get", "resource", ref, "-o", "json")
	var r convergev1.Resource
	unmarshalProto(l.t, res.stdout, &r)
	return &r
}

// unmarshalProto parses what conctl printed with -o json into m.
func unmarshalProto(t *testing.T, out string, m proto.Message) {
	t.Helper()
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(out), m); err != nil {
		t.Fatalf("conctl -o json printed what is not a %s: %v\n%s", m.ProtoReflect().Descriptor().Name(), err, out)
	}
}

// waitPhase waits until kind/name is in phase, read with the Go client.
func (l *lifecycle) waitPhase(kind, name, phase string) *convergev1.Resource {
	l.t.Helper()
	return waitResource(l.t, l.srv.api, kind, name, phase, lifecycleTimeout, func(r *convergev1.Resource) bool {
		return r != nil && r.GetPhase() == phase
	})
}

// waitSynced waits until kind/name is Ready having observed generation gen.
func (l *lifecycle) waitSynced(kind, name string, gen int64) *convergev1.Resource {
	l.t.Helper()
	return waitResource(l.t, l.srv.api, kind, name, fmt.Sprintf("Ready at generation %d", gen), lifecycleTimeout,
		func(r *convergev1.Resource) bool {
			return r != nil && r.GetPhase() == client.PhaseReady && r.GetSyncedGeneration() == gen
		})
}

// setDrift marks kind/name as drifted, or not: the worker reports it
// unhealthy while it is.
func (l *lifecycle) setDrift(kind, name string, drifted bool) {
	l.t.Helper()
	p := filepath.Join(l.driftDir, kind+"."+name)
	var err error
	if drifted {
		err = os.WriteFile(p, nil, 0o644)
	} else {
		err = os.Remove(p)
	}
	if err != nil {
		l.t.Fatal(err)
	}
}

// lcRecord is one line of the lifecycleworker's -record file.
type lcRecord struct {
	// Event is "task" or "config".
	Event       string          `json:"event"`
	Kind        string          `json:"kind"`
	KindVersion int             `json:"kind_version"`
	Reaction    string          `json:"reaction"`
	Trigger     string          `json:"trigger"`
	Name        string          `json:"name"`
	UID         string          `json:"uid"`
	Generation  int64           `json:"generation"`
	Config      json.RawMessage `json:"config"`
	DedupToken  string          `json:"dedup_token"`
	ImportID    string          `json:"import_id"`
	Operation   *struct {
		ID   string `json:"id"`
		Verb string `json:"verb"`
	} `json:"operation"`
	Reactor *struct {
		Binding           string `json:"binding"`
		Transition        string `json:"transition"`
		WatchedKind       string `json:"watched_kind"`
		WatchedName       string `json:"watched_name"`
		WatchedGeneration int64  `json:"watched_generation"`
		WatchedPhase      string `json:"watched_phase"`
	} `json:"reactor"`
	At time.Time `json:"at"`
}

func (r lcRecord) String() string {
	s := fmt.Sprintf("%s %s %s/v%d", r.At.Format("15:04:05.000"), r.Event, r.Kind, r.KindVersion)
	if r.Event == "config" {
		return s + " config " + string(r.Config)
	}
	s += fmt.Sprintf(" %s(%s) %s gen %d", r.Reaction, r.Trigger, r.Name, r.Generation)
	if len(r.Config) > 0 {
		s += " config " + string(r.Config)
	}
	if e := r.Reactor; e != nil {
		s += fmt.Sprintf(" [binding %s: %s/%s %s at gen %d (%s), token %s]", e.Binding, e.WatchedKind, e.WatchedName,
			e.Transition, e.WatchedGeneration, e.WatchedPhase, r.DedupToken)
	}
	if op := r.Operation; op != nil {
		s += fmt.Sprintf(" [operation %s %s]", op.ID, op.Verb)
	}
	return s
}

// records reads what the worker has recorded so far.
func (l *lifecycle) records() []lcRecord {
	l.t.Helper()
	raw, err := os.ReadFile(l.record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		l.t.Fatalf("reading the worker's records: %v", err)
	}
	var out []lcRecord
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r lcRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			l.t.Fatalf("the worker's records: line %d: %v: %s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, r)
	}
	return out
}

// tasks keeps the records of the tasks the worker ran for kind/name with
// trigger ("" for any).
func (l *lifecycle) tasks(kind, name, trigger string) []lcRecord {
	l.t.Helper()
	var out []lcRecord
	for _, r := range l.records() {
		if r.Event == "task" && r.Kind == kind && r.Name == name && (trigger == "" || r.Trigger == trigger) {
			out = append(out, r)
		}
	}
	return out
}

// waitRecord waits until the worker has recorded something match accepts,
// and returns the first such record; what says what is awaited.
func (l *lifecycle) waitRecord(what string, match func(lcRecord) bool) lcRecord {
	l.t.Helper()
	deadline := time.Now().Add(lifecycleTimeout)
	for {
		all := l.records()
		for _, r := range all {
			if match(r) {
				return r
			}
		}
		if l.worker.exited() {
			l.t.Fatalf("the worker exited before it recorded %s", what)
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("after %s the worker has not recorded %s; it recorded:\n%s", lifecycleTimeout, what, renderLC(all))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func renderLC(all []lcRecord) string {
	if len(all) == 0 {
		return "  nothing"
	}
	lines := make([]string, len(all))
	for i, r := range all {
		lines[i] = "  " + r.String()
	}
	return strings.Join(lines, "\n")
}

// configOf decodes a record's config, or a status's "seen.config", into a
// map for comparison.
func configOf(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("config %s: %v", raw, err)
	}
	return m
}

// seen returns what the worker wrote under status.seen of r.
func seen(t *testing.T, r *convergev1.Resource) (kindVersion, generation int64, trigger string, config map[string]any) {
	t.Helper()
	s := r.GetStatus().GetFields()["seen"].GetStructValue()
	if s == nil {
		t.Fatalf("%s/%s has no status.seen: %s", r.GetKind(), r.GetName(), explain(r))
	}
	f := s.GetFields()
	if c := f["config"].GetStructValue(); c != nil {
		config = c.AsMap()
	}
	return int64(f["kind_version"].GetNumberValue()), int64(f["generation"].GetNumberValue()), f["trigger"].GetStringValue(), config
}

// sameJSON reports whether a and b encode to the same JSON.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// eventLine finds the line of a `conctl describe` report's events table
// with reason, or "".
func eventLine(report, reason string) string {
	for _, line := range strings.Split(report, "\n") {
		if strings.Contains(line, " "+reason+" ") {
			return line
		}
	}
	return ""
}
