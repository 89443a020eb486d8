package stdterraform

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// mirror is what scripts/find-tf-providers.sh built, once per test binary.
var mirror struct {
	once       sync.Once
	path, skip string
}

// providerMirror returns a terraform CLI configuration file that installs
// providers from the filesystem mirror scripts/find-tf-providers.sh builds
// (the time provider, from its Go module, once), or skips saying why.
func providerMirror(t *testing.T) string {
	t.Helper()
	mirror.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var stderr strings.Builder
		cmd := exec.CommandContext(ctx, "bash", "../../scripts/find-tf-providers.sh")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		mirror.path = strings.TrimSpace(string(out))
		if err != nil || mirror.path == "" {
			mirror.skip = fmt.Sprintf("skipped: no provider mirror: scripts/find-tf-providers.sh: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
	})
	if mirror.skip != "" {
		t.Skip(mirror.skip)
	}
	rc := filepath.Join(t.TempDir(), "cli.tfrc")
	content := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", mirror.path)
	if err := os.WriteFile(rc, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return rc
}

// genHandler is a handler for a generated kind of the time provider.
func genHandler(t *testing.T, typ, replace string, status ...string) *handler {
	t.Helper()
	bin := terraformBinary(t)
	rc := providerMirror(t)
	h := newTestHandler(t, config{Binary: bin, Env: map[string]string{"TF_CLI_CONFIG_FILE": rc}})
	props := map[string]any{MetaField: map[string]any{}}
	for _, s := range status {
		props[s] = map[string]any{}
	}
	spec, _ := structpb.NewStruct(map[string]any{BindingKeyword: map[string]any{"source": "hashicorp/time", "version": "0.14.2", "type": typ, "replace": replace}})
	st, _ := structpb.NewStruct(map[string]any{"properties": props})
	b, err := BindingOf(&convergev1.KindManifest{SpecSchema: spec, StatusSchema: st})
	if err != nil || b == nil {
		t.Fatalf("BindingOf: %v, %v", b, err)
	}
	h.binding = b
	h.statusFields = map[string]bool{}
	for _, s := range status {
		h.statusFields[s] = true
	}
	return h
}

func genStatusOf(t *testing.T, res *converge.Result) map[string]any {
	t.Helper()
	raw, err := json.Marshal(res.Status)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func condition(res *converge.Result, typ string) converge.Condition {
	for _, c := range res.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return converge.Condition{}
}

// TestGeneratedStaticLifecycle: time_static through its generated kind:
// apply reports the computed attributes, a changed rfc3339 replaces the
// object (and says so), a template in the spec stays a literal, and
// destroy empties the state.
func TestGeneratedStaticLifecycle(t *testing.T) {
	h := genHandler(t, "time_static", "", "rfc3339", "year", "id")
	spec := map[string]any{"rfc3339": "2024-01-02T03:04:05Z", "triggers": map[string]any{"k": "${path.module}"}}
	res, err := h.genApply(false)(testCtx(t), task(t, "s", spec, nil))
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	st := genStatusOf(t, res)
	if st["rfc3339"] != "2024-01-02T03:04:05Z" || st["year"] != float64(2024) {
		t.Errorf("status %v: want rfc3339 and year 2024", st)
	}
	meta, _ := st[MetaField].(map[string]any)
	if meta["address"] != "time_static.this" || meta["replaced"] != false || !strings.HasPrefix(fmt.Sprint(meta["state"]), "local ") {
		t.Errorf("status.terraform %v: want the address, replaced false and the local state", meta)
	}
	l, _ := resourceLayout(filepath.Join(h.root, "resources"), "default", "std.terraform", "s")
	state, _ := os.ReadFile(l.stateFile())
	// terraform indents its state and OpenTofu does not.
	if !strings.Contains(strings.Join(strings.Fields(string(state)), ""), `"k":"${path.module}"`) {
		t.Errorf("the trigger's template was evaluated, not kept literally: %s", state)
	}

	previous, _ := json.Marshal(res.Status)
	spec["rfc3339"] = "2025-01-02T03:04:05Z"
	tk, events := recordingTask(t, "s", spec)
	tk.Status = previous
	res, err = h.genApply(false)(testCtx(t), tk)
	if err != nil {
		t.Fatalf("apply of a new rfc3339: %v", err)
	}
	wantReplacing(t, *events, eventReplacing, "applying")
	if c := condition(res, condReplaced); c.Status != converge.ConditionTrue || !strings.Contains(c.Message, "spec.rfc3339") {
		t.Errorf("Replaced condition %+v: want True naming spec.rfc3339", c)
	}
	if st := genStatusOf(t, res); st["year"] != float64(2025) {
		t.Errorf("status after the replacement %v: want year 2025", st)
	}

	if _, err := h.genDestroy(testCtx(t), tk); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if empty, err := localStateEmpty(l, "default"); err != nil || !empty {
		t.Errorf("state after destroy: empty=%v err=%v, want empty", empty, err)
	}
}

// TestGeneratedForbidReplace: a kind that forbids replacement refuses a
// plan that replaces, terminally, naming the attribute.
func TestGeneratedForbidReplace(t *testing.T) {
	h := genHandler(t, "time_static", ReplaceForbid, "rfc3339")
	spec := map[string]any{"rfc3339": "2024-01-02T03:04:05Z"}
	if _, err := h.genApply(false)(testCtx(t), task(t, "f", spec, nil)); err != nil {
		t.Fatalf("apply: %v", err)
	}
	spec["rfc3339"] = "2025-01-02T03:04:05Z"
	tk, events := recordingTask(t, "f", spec)
	_, err := h.genApply(false)(testCtx(t), tk)
	t.Logf("refusal: %v", err)
	if !converge.IsTerminal(err) || !strings.Contains(err.Error(), "replacement forbidden") || !strings.Contains(err.Error(), "spec.rfc3339") {
		t.Fatalf("apply that replaces: %v; want a terminal refusal naming spec.rfc3339", err)
	}
	wantReplacing(t, *events, eventReplaceForbidden, "not applied")
}

// recordingTask is task's, keeping the events the handler records.
func recordingTask(t *testing.T, name string, spec any) (*converge.Task, *[]converge.Event) {
	var events []converge.Event
	return task(t, name, spec, nil).WithEventRecorder(func(e converge.Event) { events = append(events, e) }), &events
}

// wantReplacing checks that the handler announced the replacement of
// time_static.this forced by spec.rfc3339, and what it did about it.
func wantReplacing(t *testing.T, events []converge.Event, reason, says string) {
	t.Helper()
	if len(events) != 1 || events[0].Type != converge.EventWarning || events[0].Reason != reason ||
		!strings.Contains(events[0].Message, "time_static.this") || !strings.Contains(events[0].Message, "spec.rfc3339") ||
		!strings.Contains(events[0].Message, says) {
		t.Errorf("events %+v; want one Warning %s naming time_static.this and spec.rfc3339, saying %q", events, reason, says)
	}
}

// TestGeneratedPlanRefusal: a spec the provider refuses is a terminal
// failure with its diagnostic and the spec field.
func TestGeneratedPlanRefusal(t *testing.T) {
	h := genHandler(t, "time_static", "", "rfc3339")
	_, err := h.genApply(false)(testCtx(t), task(t, "bad", map[string]any{"rfc3339": "yesterday"}, nil))
	t.Logf("refusal: %v", err)
	if !converge.IsTerminal(err) || !strings.Contains(err.Error(), "spec.rfc3339") {
		t.Fatalf("apply of a bad rfc3339: %v; want a terminal failure naming spec.rfc3339", err)
	}
}

// TestGeneratedImportAndDrift: import_id adopts an existing time_offset,
// and a resync after the state was changed outside finds the drift and
// applies it back.
func TestGeneratedImportAndDrift(t *testing.T) {
	h := genHandler(t, "time_static", "", "rfc3339", "unix")
	spec := map[string]any{"import_id": "2020-02-12T06:36:13Z", "rfc3339": "2020-02-12T06:36:13Z"}
	res, err := h.genApply(false)(testCtx(t), task(t, "imp", spec, nil))
	if err != nil {
		t.Fatalf("apply with import_id: %v", err)
	}
	if st := genStatusOf(t, res); st["unix"] != float64(1581489373) {
		t.Errorf("status after import %v: want unix 1581489373", st)
	}
	// Resync with nothing changed: no drift, and the last apply's report
	// stands.
	previous := genStatusOf(t, res)
	previous[MetaField].(map[string]any)["applied_at"] = "2000-01-01T00:00:00Z" // a time no run of this test can stamp
	clean := task(t, "imp", spec, nil)
	clean.Status, _ = json.Marshal(previous)
	res, err = h.genApply(true)(testCtx(t), clean)
	if err != nil {
		t.Fatalf("resync: %v", err)
	}
	if at := genStatusOf(t, res)[MetaField].(map[string]any)["applied_at"]; at != "2000-01-01T00:00:00Z" {
		t.Errorf("a resync that applied nothing set applied_at to %v; want the last apply's kept", at)
	}
	if c := condition(res, condDrift); c.Status != converge.ConditionFalse {
		t.Errorf("Drift condition %+v after a clean resync: want False", c)
	}
	// Change the state outside: the rfc3339 in state no longer is the spec's.
	l, _ := resourceLayout(filepath.Join(h.root, "resources"), "default", "std.terraform", "imp")
	raw, err := os.ReadFile(l.stateFile())
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(raw), "2020-02-12T06:36:13Z", "2021-02-12T06:36:13Z")
	if err := os.WriteFile(l.stateFile(), []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = h.genApply(true)(testCtx(t), task(t, "imp", spec, nil))
	if err != nil {
		t.Fatalf("resync after drift: %v", err)
	}
	t.Logf("conditions: %+v", res.Conditions)
	if c := condition(res, condDrift); c.Status != converge.ConditionTrue {
		t.Errorf("Drift condition %+v: want True", c)
	}
	if st := genStatusOf(t, res); st["rfc3339"] != "2020-02-12T06:36:13Z" {
		t.Errorf("status after the drift was corrected %v: want the spec's rfc3339 back", st)
	}
}

// TestGeneratedPGBackend: a generated kind's state lives in PostgreSQL
// with the pg backend, one schema per resource, and is emptied by the
// destroy.
func TestGeneratedPGBackend(t *testing.T) {
	h := genHandler(t, "time_static", "", "rfc3339", "unix")
	url := startPostgres(t)
	h.settings.Backend = &backend{Type: backendPG, ConnStr: url}
	spec := map[string]any{"import_id": "2020-02-12T06:36:13Z", "rfc3339": "2020-02-12T06:36:13Z"}
	tk := task(t, "pg", spec, nil)
	res, err := h.genApply(false)(testCtx(t), tk)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	st := genStatusOf(t, res)
	meta, _ := st[MetaField].(map[string]any)
	if st["unix"] != float64(1581489373) || !strings.HasPrefix(fmt.Sprint(meta["state"]), "pg schema tf_default_std_terraform_pg_") {
		t.Errorf("status %v: want the imported object and its pg schema", st)
	}
	previous, _ := json.Marshal(res.Status)
	tk.Status = previous
	if _, err := h.genDestroy(testCtx(t), tk); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	r, err := h.genApply(false)(testCtx(t), task(t, "pg", map[string]any{"rfc3339": "2020-02-12T06:36:13Z"}, nil))
	if err != nil {
		t.Fatalf("apply after destroy: %v", err)
	}
	if c := condition(r, condReplaced); c.Status != converge.ConditionFalse || c.Reason != "Created" {
		t.Errorf("a fresh create after the destroy: Replaced %+v; want False, Created", c)
	}
}

// TestGeneratedProviderNotInMirror: a provider version the mirror does not
// have fails the run (transiently: the mirror may be filled), naming the
// directory it was looked for in.
func TestGeneratedProviderNotInMirror(t *testing.T) {
	h := genHandler(t, "time_static", "", "rfc3339")
	h.binding.Version = "0.99.0"
	_, err := h.genApply(false)(testCtx(t), task(t, "missing", map[string]any{}, nil))
	want := filepath.Join("registry.terraform.io", "hashicorp", "time", "0.99.0")
	if err == nil || converge.IsTerminal(err) || !strings.Contains(err.Error(), "looked for in the filesystem mirror at") || !strings.Contains(err.Error(), want) {
		t.Fatalf("apply with a provider version not in the mirror: %v; want a transient error naming %s", err, want)
	}
	t.Logf("error: %v", err)
}
