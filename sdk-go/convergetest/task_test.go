package convergetest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
)

func TestParseManifests(t *testing.T) {
	ms := convergetest.ReadManifests(t, "testdata/kinds.json")
	if len(ms) != 2 || ms[0].Kind() != "zone" || ms[0].Version() != 2 || ms[1].Kind() != "notifier" || ms[1].Version() != 1 {
		t.Fatalf("read %d manifests; want zone v2 and notifier v1 (the resource skipped)", len(ms))
	}
	if m := ms.Get(t, "zone", 0); m != ms[0] {
		t.Errorf("Get(zone, 0) = %v", m)
	}

	// YAML documents, split at ---, decoded by the function given; JSON
	// is YAML, so json.Unmarshal stands in for a YAML library here.
	yamlDocs := "# comment\n{\"kind\": \"a\", \"kind_version\": 1}\n---\n# only a comment\n--- # next\n{\"kind\": \"b\", \"kind_version\": 3}\n"
	ms2, err := convergetest.ParseManifests([]byte(yamlDocs), convergetest.YAML(func(data []byte, v any) error {
		s := strings.TrimSpace(stripComments(string(data)))
		if s == "" {
			return nil
		}
		return json.Unmarshal([]byte(s), v)
	}))
	if err != nil || len(ms2) != 2 || ms2[0].Kind() != "a" || ms2[1].Version() != 3 {
		t.Fatalf("YAML: %v, %v", ms2, err)
	}

	for _, c := range []struct{ in, want string }{
		{`{"kind": "a", "kind_version": 1, "spec_shema": {}}`, `document 1: `},
		{`{"kind": "a", "kind_version": 1} {"kind": "Bad", "kind_version": 1}`, `document 2: manifest Bad v1: validation error:`},
		{`{"kind": "a", "kind_version": 1, "reactions": [{"name": "r", "trigger": "later", "emits": ["status"]}]}`, `reactions[0].trigger`},
		{`kind: a`, `not JSON (for YAML, pass the YAML option)`},
		{`[1]`, `document 1: not a JSON object`},
	} {
		if _, err := convergetest.ParseManifests([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseManifests(%s) = %v; want an error containing %q", c.in, err, c.want)
		}
	}
	if _, err := convergetest.ParseManifests([]byte(`{"kind": "a", "kind_version": 1, "spec_shema": {}}`)); !strings.Contains(fmt.Sprint(err), "spec_shema") {
		t.Errorf("an unknown field: %v; want it named", err)
	}
}

func stripComments(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func TestNewTaskFillsWhatTheServerWould(t *testing.T) {
	ms := convergetest.ReadManifests(t, "testdata/kinds.json")
	zone := ms.Get(t, "zone", 2)
	before := time.Now()
	if convergetest.NewTask(t, zone, "compose", nil).Preview() || !convergetest.NewTask(t, zone, "compose", nil, convergetest.AsPreview()).Preview() {
		t.Error("a task is a preview only with AsPreview")
	}
	task := convergetest.NewTask(t, zone, "compose", `{"size":3}`)
	if task.Kind != "zone" || task.KindVersion != 2 || task.Reaction != "compose" || task.Trigger != "specChange" ||
		task.Namespace != "default" || task.Name != "test" || task.UID == "" || task.Generation != 1 || task.Attempt != 1 ||
		string(task.Spec) != `{"size":3}` || task.Status != nil || task.Config != nil || task.Rollup != nil || task.Operation != nil {
		t.Errorf("task = %+v", task)
	}
	if want := fmt.Sprintf("%s/specChange/1/1", task.UID); task.DedupToken != want {
		t.Errorf("dedup token %q; want %q", task.DedupToken, want)
	}
	if d := task.Deadline.Sub(before); d < 60*time.Second || d > 61*time.Second {
		t.Errorf("deadline in %s; want the policy's 60 s", d)
	}
	other := convergetest.NewTask(t, zone, "compose", nil, convergetest.WithName("other"))
	if other.UID == task.UID || string(other.Spec) != "{}" {
		t.Errorf("another resource: uid %q (first %q), spec %s", other.UID, task.UID, other.Spec)
	}

	task = convergetest.NewTask(t, zone, "compose", struct {
		Size int `json:"size"`
	}{4}, convergetest.WithNamespace("ns"), convergetest.WithUID("42"), convergetest.WithLabels(map[string]string{"a": "b"}),
		convergetest.WithGeneration(7), convergetest.WithAttempt(3), convergetest.WithStatus(map[string]int{"size": 2}),
		convergetest.WithRejectedStatus(`{"size":"x"}`), convergetest.WithConfig(json.RawMessage(`{"region":"eu"}`)),
		convergetest.WithDeadline(time.Time{}))
	if task.Namespace != "ns" || task.UID != "42" || task.Labels["a"] != "b" || task.Generation != 7 || task.Attempt != 3 ||
		string(task.Spec) != `{"size":4}` || string(task.Status) != `{"size":2}` || string(task.RejectedStatus) != `{"size":"x"}` ||
		string(task.Config) != `{"region":"eu"}` || !task.Deadline.IsZero() || task.DedupToken != "42/specChange/7/1" {
		t.Errorf("task with options = %+v", task)
	}

	rollup := convergetest.NewTask(t, zone, "rollup", nil)
	if rollup.Trigger != "childrenSettled" || rollup.Rollup == nil {
		t.Errorf("rollup task = %+v", rollup)
	}
	rollup = convergetest.NewTask(t, zone, "rollup", nil, convergetest.WithRollup(converge.Rollup{Total: 3, Failed: 1}))
	if rollup.Rollup.Total != 3 || rollup.Rollup.Failed != 1 {
		t.Errorf("rollup = %+v", rollup.Rollup)
	}

	op := convergetest.NewTask(t, zone, "restart", nil)
	if op.Trigger != "operation" || op.Operation == nil || op.Operation.Verb != "restart" || op.Operation.ID != "op-1" ||
		string(op.Operation.Input) != "{}" || op.DedupToken != "operation/op-1" {
		t.Errorf("operation task = %+v %+v", op, op.Operation)
	}
	op = convergetest.NewTask(t, zone, "restart", nil, convergetest.WithOperation("op-9", `{"force":true}`))
	if op.Operation.ID != "op-9" || string(op.Operation.Input) != `{"force":true}` {
		t.Errorf("operation = %+v", op.Operation)
	}

	reactor := convergetest.NewTask(t, ms.Get(t, "notifier", 1), "notify", nil)
	if reactor.Trigger != "reactor" || reactor.Reactor == nil || reactor.Reactor.Transition != converge.TransitionCreated ||
		reactor.Name != "" || reactor.UID != "" || reactor.Spec != nil || reactor.DedupToken == "" {
		t.Errorf("reactor task = %+v", reactor)
	}
	reactor = convergetest.NewTask(t, ms.Get(t, "notifier", 1), "notify", nil,
		convergetest.WithReactorEvent(converge.ReactorEvent{Binding: "b", Transition: converge.TransitionFailed}))
	if reactor.Reactor.Binding != "b" || reactor.Reactor.Transition != converge.TransitionFailed {
		t.Errorf("reactor event = %+v", reactor.Reactor)
	}
}

// fatal records a test's Fatalf instead of stopping it.
type fatal struct {
	testing.TB
	msg string
}

func (f *fatal) Helper() {}
func (f *fatal) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestNewTaskRefusesWhatTheServerWouldNotSend(t *testing.T) {
	ms := convergetest.ReadManifests(t, "testdata/kinds.json")
	errTooBig := errors.New("too big")
	// A stand-in validator: it refuses documents with "size": 99, whatever
	// the schema.
	validator := func(schema, doc json.RawMessage) error {
		if !json.Valid(schema) {
			return fmt.Errorf("schema %s is not JSON", schema)
		}
		if strings.Contains(string(doc), `"size":99`) || strings.Contains(string(doc), `"force":"yes"`) {
			return errTooBig
		}
		return nil
	}
	data, err := os.ReadFile("testdata/kinds.json")
	if err != nil {
		t.Fatal(err)
	}
	validated, err := convergetest.ParseManifests(data, convergetest.ValidateWith(validator))
	if err != nil {
		t.Fatal(err)
	}
	zone := convergetest.Manifests(validated).Get(t, "zone", 2)
	if err := zone.ValidateStatus(json.RawMessage(`{"size":99}`)); !errors.Is(err, errTooBig) {
		t.Errorf("ValidateStatus = %v; want the validator's error", err)
	}
	if err := ms.Get(t, "zone", 2).ValidateStatus(json.RawMessage(`{"size":99}`)); err != nil {
		t.Errorf("ValidateStatus without a validator = %v", err)
	}

	for _, c := range []struct {
		name     string
		m        *convergetest.Manifest
		reaction string
		spec     any
		opts     []convergetest.TaskOption
		want     string
	}{
		{"unknown reaction", zone, "reconcile", nil, nil, `NewTask("reconcile"): kind zone v2 has no reaction "reconcile"; it has "compose", "rollup", "restart"`},
		{"array spec", zone, "compose", `[1]`, nil, `spec: [1] is not a JSON object`},
		{"null spec", zone, "compose", `null`, nil, `spec: null is not a JSON object`},
		{"bad status", zone, "compose", nil, []convergetest.TaskOption{convergetest.WithStatus("x")}, `status: x is not a JSON object`},
		{"spec refused", zone, "compose", `{"size":99}`, nil, `spec_schema of kind zone v2 refuses {"size":99}: too big`},
		{"input refused", zone, "restart", nil, []convergetest.TaskOption{convergetest.WithOperation("", `{"force":"yes"}`)},
			`input_schema of verb restart of kind zone v2 refuses {"force":"yes"}: too big`},
		{"reactor with a spec", ms.Get(t, "notifier", 1), "notify", `{}`, nil, `a reactor task carries no resource: pass a nil spec`},
		{"no manifest", nil, "compose", nil, nil, `the manifest is nil`},
	} {
		f := &fatal{TB: t}
		if task := convergetest.NewTask(f, c.m, c.reaction, c.spec, c.opts...); task != nil || !strings.Contains(f.msg, c.want) {
			t.Errorf("%s: NewTask = %v, failing with %q; want it to fail with %q", c.name, task, f.msg, c.want)
		}
	}
}
