package tfgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/convergehq/converge/stdworker/stdterraform"
)

// Fetch is how FetchSchema runs terraform.
type Fetch struct {
	// Binary is the terraform or tofu executable.
	Binary string
	// Mirror, when set, is a provider filesystem mirror: the providers come
	// from there and nowhere else. Otherwise terraform installs them as its
	// CLI configuration (TF_CLI_CONFIG_FILE, ~/.terraformrc) says.
	Mirror string
}

// FetchSchema installs provider source at version in a scratch directory
// and returns `terraform providers schema -json`.
func (f Fetch) FetchSchema(ctx context.Context, source, version string) ([]byte, error) {
	bin, err := exec.LookPath(f.Binary)
	if err != nil {
		return nil, fmt.Errorf("--terraform: %q: %w", f.Binary, err)
	}
	dir, err := os.MkdirTemp("", "tfgen-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	local := source[strings.LastIndex(source, "/")+1:]
	cfg := map[string]any{"terraform": map[string]any{"required_providers": map[string]any{
		local: map[string]any{"source": stdterraform.QualifiedSource(source), "version": version},
	}}}
	raw, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "main.tf.json"), raw, 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1", "TF_INPUT=0")
	if f.Mirror != "" {
		abs, err := filepath.Abs(f.Mirror)
		if err != nil {
			return nil, err
		}
		rc := filepath.Join(dir, "cli.tfrc")
		content := fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n  }\n}\n", abs)
		if err := os.WriteFile(rc, []byte(content), 0o644); err != nil {
			return nil, err
		}
		env = append(env, "TF_CLI_CONFIG_FILE="+rc)
	}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir, cmd.Env = dir, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v: %s", filepath.Base(bin), strings.Join(args, " "), err, lastLines(stderr.String()+string(out), 12))
		}
		return out, nil
	}
	if _, err := run("init", "-no-color", "-input=false", "-backend=false"); err != nil {
		if f.Mirror != "" {
			b := stdterraform.Binding{Source: source, Version: version}
			return nil, fmt.Errorf("%w; the mirror was searched at %s", err, b.MirrorDir(f.Mirror))
		}
		return nil, err
	}
	return run("providers", "schema", "-json")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " ")
}
