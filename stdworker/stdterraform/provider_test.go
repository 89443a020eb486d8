package stdterraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
)

func TestApplyReportsOutputsAndDestroyEmptiesState(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	marker := filepath.Join(t.TempDir(), "destroyed")
	spec := map[string]any{"source": "./hello", "variables": map[string]any{"name": "world", "marker": marker}}

	res, err := h.apply(testCtx(t), task(t, "web", spec, nil))
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	out := outputs(t, res)
	if out["greeting"] != "hello world" || out["workspace"] != "default" {
		t.Errorf("outputs = %v, want greeting %q and workspace default", out, "hello world")
	}
	if out["token"] != Redacted {
		t.Errorf("sensitive output token = %v, want %q", out["token"], Redacted)
	}
	st := res.Status.(status)
	if st.TerraformVersion == "" || st.AppliedAt == "" || !strings.Contains(st.State, "terraform.tfstate") {
		t.Errorf("status = %+v, want a version, applied_at and the state's path", st)
	}
	l, _ := resourceLayout(filepath.Join(h.root, "resources"), "default", "std.terraform", "web")
	if empty, err := localStateEmpty(l, "default"); err != nil || empty {
		t.Fatalf("state after apply: empty=%v err=%v, want resources", empty, err)
	}

	// A changed variable re-applies.
	spec["variables"].(map[string]any)["name"] = "there"
	res, err = h.apply(testCtx(t), task(t, "web", spec, nil))
	if err != nil {
		t.Fatalf("second apply: %v", err)
	}
	if got := outputs(t, res)["greeting"]; got != "hello there" {
		t.Errorf("greeting after the change = %v, want %q", got, "hello there")
	}

	if _, err := h.destroy(testCtx(t), task(t, "web", spec, nil)); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "destroyed" {
		t.Errorf("destroy provisioner marker: %q, %v; want the destroy to have run", b, err)
	}
	if empty, err := localStateEmpty(l, "default"); err != nil || !empty {
		t.Errorf("state after destroy: empty=%v err=%v, want empty", empty, err)
	}
	if _, err := os.Stat(l.stateFile()); err != nil {
		t.Errorf("the empty state should stay as the record of the destroy: %v", err)
	}
	if _, err := os.Stat(l.module()); !os.IsNotExist(err) {
		t.Errorf("module directory after destroy: %v, want it removed", err)
	}
}

func TestWorkspacesKeepSeparateState(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	spec := map[string]any{"source": "./hello", "workspace": "blue", "variables": map[string]any{"name": "b"}}
	res, err := h.apply(testCtx(t), task(t, "ws", spec, nil))
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := outputs(t, res)["workspace"]; got != "blue" {
		t.Errorf("workspace output = %v, want blue", got)
	}
	l, _ := resourceLayout(filepath.Join(h.root, "resources"), "default", "std.terraform", "ws")
	if empty, _ := localStateEmpty(l, "default"); !empty {
		t.Error("the default workspace holds resources, want them in workspace blue only")
	}
	if empty, _ := localStateEmpty(l, "blue"); empty {
		t.Error("workspace blue holds no resources after apply")
	}
	if _, err := h.destroy(testCtx(t), task(t, "ws", spec, nil)); err != nil {
		t.Fatalf("destroy: %v", err)
	}
	if empty, _ := localStateEmpty(l, "blue"); !empty {
		t.Error("workspace blue still holds resources after destroy")
	}
}

func TestSyntaxErrorIsTerminalWithTerraformsMessage(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	spec := map[string]any{"source": "./broken"}
	_, err := h.apply(testCtx(t), task(t, "bad", spec, nil))
	if err == nil || !converge.IsTerminal(err) {
		t.Fatalf("apply of a broken module: err = %v, want a terminal error", err)
	}
	for _, want := range []string{"Unclosed configuration block", "main.tf line 1", "no closing brace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if strings.Contains(err.Error(), fromModuleDir) || strings.Contains(err.Error(), "exit status") {
		t.Errorf("error %q should be trimmed of terraform's staging path and exit status", err)
	}
	// Nothing was applied, so deleting it needs no terraform at all.
	if _, err := h.destroy(testCtx(t), task(t, "bad", spec, nil)); err != nil {
		t.Errorf("destroy of a never-applied broken module: %v, want success", err)
	}
}

func TestInvalidModuleIsTerminal(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	_, err := h.apply(testCtx(t), task(t, "invalid", map[string]any{"source": "./invalid"}, nil))
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "Reference to undeclared local value (main.tf line 4)") {
		t.Fatalf("apply of a module referring to an undeclared local: err = %v, want a terminal error naming it and its line", err)
	}
}

func TestBadVariablesAreTerminal(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	for name, tc := range map[string]struct {
		vars any
		want string
	}{
		"missing":  {nil, "No value for required variable"},
		"mistyped": {map[string]any{"size": "big"}, "Invalid value for input variable"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := h.apply(testCtx(t), task(t, "v-"+name, map[string]any{"source": "./needsvar", "variables": tc.vars}, nil))
			if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a terminal error containing %q", err, tc.want)
			}
		})
	}
	res, err := h.apply(testCtx(t), task(t, "v-ok", map[string]any{"source": "./needsvar", "variables": map[string]any{"size": 21}}, nil))
	if err != nil {
		t.Fatalf("apply with size 21: %v", err)
	}
	if got := outputs(t, res)["double"]; got != float64(42) {
		t.Errorf("double = %v, want 42", got)
	}
}

func TestSpecAndConfigMistakes(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	cases := []struct {
		name     string
		spec     any
		cfg      any
		terminal bool
		want     string
	}{
		{"no source", map[string]any{}, nil, true, "spec.source: required"},
		{"missing dir", map[string]any{"source": "./nope"}, nil, true, `spec.source: "./nope" is not a directory`},
		{"bad workspace", map[string]any{"source": "./hello", "workspace": "a/b"}, nil, true, "spec.workspace"},
		{"variables not an object", map[string]any{"source": "./hello", "variables": []int{1}}, nil, true, "spec.variables"},
		{"unknown field", map[string]any{"source": "./hello", "vars": map[string]any{}}, nil, true, `unknown field "vars"`},
		{"missing binary", map[string]any{"source": "./hello"}, map[string]any{"binary": "no-such-terraform"}, false, `config.binary: "no-such-terraform"`},
		{"bad backend", map[string]any{"source": "./hello"}, map[string]any{"backend": map[string]any{"type": "s3"}}, false, `config.backend.type: "s3"`},
		{"prohibited env", map[string]any{"source": "./hello"}, map[string]any{"env": map[string]any{"TF_VAR_x": "1"}}, false, "config.env.TF_VAR_x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.apply(testCtx(t), task(t, "m", tc.spec, tc.cfg))
			if err == nil || converge.IsTerminal(err) != tc.terminal || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v (terminal %v), want terminal=%v containing %q", err, converge.IsTerminal(err), tc.terminal, tc.want)
			}
		})
	}
}

func TestRunsOfOneResourceDoNotOverlap(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	spec := map[string]any{"source": "./hello", "variables": map[string]any{"name": "x"}}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	same := task(t, "same", spec, nil)
	ctx := testCtx(t)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = h.apply(ctx, same)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent apply %d: %v", i, err)
		}
	}
}

func TestStatusRedactsAndBounds(t *testing.T) {
	st, err := newStatus(nil, "local x", "1.0.0")
	if err != nil || len(st.Outputs) != 0 {
		t.Fatalf("no outputs: %+v, %v", st, err)
	}
	b, _ := json.Marshal(st)
	if !strings.Contains(string(b), `"outputs":{}`) {
		t.Errorf("status %s should carry an empty outputs object", b)
	}
}

func TestDifferentResourcesRunTogether(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	var wg sync.WaitGroup
	names := []string{"ra", "rb", "rc"}
	tasks := make([]*converge.Task, len(names))
	for i, name := range names {
		tasks[i] = task(t, name, map[string]any{"source": "./hello", "variables": map[string]any{"name": name}}, nil)
	}
	ctx := testCtx(t)
	errs := make([]error, len(names))
	results := make([]*converge.Result, len(names))
	for i := range names {
		wg.Go(func() { results[i], errs[i] = h.apply(ctx, tasks[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("apply %s: %v", names[i], err)
		} else if got := outputs(t, results[i])["greeting"]; got != "hello "+names[i] {
			t.Errorf("apply %s: greeting %v, want %q", names[i], got, "hello "+names[i])
		}
	}
}

func TestMovingTheStateIsRefused(t *testing.T) {
	bin := terraformBinary(t)
	h := newTestHandler(t, config{Binary: bin})
	spec := map[string]any{"source": "./hello", "workspace": "blue", "variables": map[string]any{"name": "m"}}
	res, err := h.apply(testCtx(t), task(t, "mv", spec, nil))
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	last, err := json.Marshal(res.Status)
	if err != nil {
		t.Fatal(err)
	}
	// The resource now names another workspace, whose state is empty.
	spec["workspace"] = "green"
	moved := task(t, "mv", spec, nil)
	moved.Status = last
	_, err = h.apply(testCtx(t), moved)
	if err == nil || !converge.IsTerminal(err) || !strings.Contains(err.Error(), "state moved") || !strings.Contains(err.Error(), "workspaces/blue") {
		t.Fatalf("apply in another workspace: err = %v, want a terminal error naming the old state", err)
	}
	// Back in its own workspace it applies; a first apply (no status) in
	// any workspace does too.
	spec["workspace"] = "blue"
	back := task(t, "mv", spec, nil)
	back.Status = last
	if _, err := h.apply(testCtx(t), back); err != nil {
		t.Errorf("apply back in blue: %v", err)
	}
	// Deleting it from the wrong workspace would leave blue's resources.
	spec["workspace"] = "yellow"
	moved = task(t, "mv", spec, nil)
	moved.Status = last
	if _, err := h.destroy(testCtx(t), moved); err == nil || !strings.Contains(err.Error(), "cannot destroy: the last apply kept the state at") {
		t.Errorf("destroy from another workspace: err = %v, want a refusal naming the old state", err)
	}
	spec["workspace"] = "green"
	if _, err := h.apply(testCtx(t), task(t, "mv", spec, nil)); err != nil {
		t.Errorf("first apply in green: %v", err)
	}
}
