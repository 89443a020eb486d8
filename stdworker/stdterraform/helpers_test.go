package stdterraform

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// terraformBinary returns TERRAFORM_BINARY (as scripts/find-terraform.sh
// takes it), else a terraform or tofu on PATH, or skips the test saying
// why: these tests run the real binary, never a fake.
func terraformBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TERRAFORM_BINARY"); p != "" {
		return p
	}
	for _, name := range []string{"terraform", "tofu"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no terraform or tofu on PATH (scripts/find-terraform.sh finds or builds one); skipping tests that run it")
	return ""
}

// newTestHandler returns a handler over a fresh state directory, as
// Register would build it, with the given settings.
func newTestHandler(t *testing.T, settings config) *handler {
	t.Helper()
	root := filepath.Join(t.TempDir(), Name)
	if err := writeCLIConfig(root); err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	return &handler{root: root, baseDir: base, settings: settings, log: slog.New(slog.DiscardHandler), locks: &locks{}, inits: make(chan struct{}, 1)}
}

// task returns a task for resource name with the given spec and config.
func task(t *testing.T, name string, spec any, cfg any) *converge.Task {
	t.Helper()
	raw := func(v any) json.RawMessage {
		if v == nil {
			return nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return &converge.Task{Kind: "std.terraform", KindVersion: 1, Namespace: "default", Name: name, Generation: 1,
		Spec: raw(spec), Config: raw(cfg), Attempt: 1}
}

// testCtx bounds one handler call.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// outputs decodes the outputs of a result's status.
func outputs(t *testing.T, res *converge.Result) map[string]any {
	t.Helper()
	st, ok := res.Status.(status)
	if !ok {
		t.Fatalf("status is %T, want status", res.Status)
	}
	out := map[string]any{}
	for k, v := range st.Outputs {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			t.Fatalf("output %s: %v", k, err)
		}
		out[k] = x
	}
	return out
}
