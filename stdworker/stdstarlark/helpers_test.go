package stdstarlark

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// bundle writes files (path → content) into a fresh directory and returns
// a program running its main.star.
func bundle(t *testing.T, files map[string]string) *program {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return newProgram(dir)
}

// newProgram returns a program running dir's main.star with the default
// step limit.
func newProgram(dir string) *program {
	return &program{dir: dir, main: DefaultMain, maxSteps: DefaultMaxSteps, programs: &programs{}, log: slog.New(slog.DiscardHandler)}
}

// composeTask is a task for resource name with spec.
func composeTask(t *testing.T, name string, spec any) *converge.Task {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	return &converge.Task{Kind: "landing", KindVersion: 1, Reaction: "compose", Trigger: "specChange",
		Namespace: "default", Name: name, Generation: 3, Spec: raw, Config: json.RawMessage(`{"team":"infra"}`),
		Labels: map[string]string{"env": "dev"}}
}

// compose runs p's compose for a task with spec, as a composer.
func compose(t *testing.T, p *program, spec any) (*converge.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return p.composeHandler(true)(ctx, composeTask(t, "lz", spec))
}

// composeSrc runs a one-file bundle whose main.star is src.
func composeSrc(t *testing.T, src string) (*converge.Result, error) {
	t.Helper()
	return compose(t, bundle(t, map[string]string{"main.star": src}), map[string]any{})
}
