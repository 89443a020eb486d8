package stdterraform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/convergehq/converge/sdk-go/converge"
)

// overrideFile is the file stdterraform adds to every fetched module to
// point its state at the resource's backend; as an _override.tf file it
// replaces any backend block the module declares.
const overrideFile = "zz_converge_backend_override.tf"

// run is one prepared terraform run for one resource: the module fetched
// into its directory, initialised against the resource's state, the
// workspace selected.
type run struct {
	tf *tfexec.Terraform
	l  layout
	s  spec
	// where says where the state lives, for status and messages.
	where string
}

// runEnv is what a run needs besides the resource: the provider's files and
// the merged configuration.
type runEnv struct {
	root    string // the provider's directory under Env.StateDir
	baseDir string // what relative local module sources are relative to
	cfg     config
	// inits is held by the run that is initialising: terraform's plugin
	// cache, shared by every resource, is not safe for concurrent inits.
	inits chan struct{}
}

// lockInit takes re.inits, or gives up when ctx ends.
func (re runEnv) lockInit(ctx context.Context) (func(), error) {
	select {
	case re.inits <- struct{}{}:
		return func() { <-re.inits }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for another resource's terraform init: %w", ctx.Err())
	}
}

// prepare fetches s's module into l and initialises it. Errors are terminal
// when the spec (not the world) is wrong.
func prepare(ctx context.Context, re runEnv, t *converge.Task, l layout, s spec) (*run, error) {
	bin, err := lookPath(re.cfg.binary())
	if err != nil {
		return nil, fmt.Errorf("config.binary: %q: %w", re.cfg.binary(), err)
	}
	src := s.Source
	if isLocal(src) {
		if !filepath.IsAbs(src) {
			src = filepath.Join(re.baseDir, src)
		}
		if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
			return nil, converge.Terminal(fmt.Errorf("spec.source: %q is not a directory on the worker", s.Source))
		}
	}
	if err := os.RemoveAll(l.module()); err != nil {
		return nil, fmt.Errorf("clearing the module directory: %w", err)
	}
	if err := os.MkdirAll(l.module(), 0o755); err != nil {
		return nil, fmt.Errorf("creating the module directory: %w", err)
	}
	if err := os.MkdirAll(l.state(), 0o755); err != nil {
		return nil, fmt.Errorf("creating the state directory: %w", err)
	}
	tf, err := tfexec.NewTerraform(l.module(), bin)
	if err != nil {
		return nil, fmt.Errorf("config.binary: %w", err)
	}
	if err := tf.SetEnv(re.env()); err != nil {
		return nil, fmt.Errorf("config.env: %w", err)
	}
	r := &run{tf: tf, l: l, s: s}
	if err := r.init(ctx, re, t, src); err != nil {
		return nil, err
	}
	if ws := s.workspace(); ws != "default" {
		if err := tf.WorkspaceSelect(ctx, ws); err != nil {
			if err := tf.WorkspaceNew(ctx, ws); err != nil {
				return nil, tfError("creating spec.workspace "+quote(ws), err, nil)
			}
		}
	}
	v, err := tf.Validate(ctx)
	if err != nil {
		return nil, tfError("terraform validate", err, nil)
	}
	if !v.Valid {
		return nil, converge.Terminal(fmt.Errorf("module %s is invalid: %s", quote(s.Source), validateMessage(v.Diagnostics)))
	}
	return r, nil
}

// init fetches the module into the run's directory and initialises it
// against the resource's backend, one run at a time.
func (r *run) init(ctx context.Context, re runEnv, t *converge.Task, src string) error {
	unlock, err := re.lockInit(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := r.tf.Init(ctx, tfexec.FromModule(src), tfexec.Backend(false)); err != nil {
		return tfError("spec.source "+quote(r.s.Source), err, configError)
	}
	backendOpts, err := r.backend(re, t)
	if err != nil {
		return err
	}
	if err := r.tf.Init(ctx, backendOpts...); err != nil {
		return tfError("terraform init", err, configError)
	}
	return nil
}

// backend writes the backend override into the module and returns the init
// options that point it at the resource's state.
func (r *run) backend(re runEnv, t *converge.Task) ([]tfexec.InitOption, error) {
	var block string
	opts := []tfexec.InitOption{tfexec.Reconfigure(true)}
	r.where = stateWhere(re.cfg, t, r.l, r.s)
	switch re.cfg.backendType() {
	case backendPG:
		block = `backend "pg" {}`
		opts = append(opts, tfexec.BackendConfig("schema_name="+re.cfg.schema(t)))
	default:
		block = `backend "local" {}`
		opts = append(opts, tfexec.BackendConfig("path="+r.l.stateFile()),
			tfexec.BackendConfig("workspace_dir="+filepath.Join(r.l.state(), "workspaces")))
	}
	content := "# Written by stdworker's stdterraform provider: the resource's state backend.\nterraform {\n  " + block + "\n}\n"
	if err := os.WriteFile(filepath.Join(r.l.module(), overrideFile), []byte(content), 0o644); err != nil {
		return nil, fmt.Errorf("writing the backend override: %w", err)
	}
	return opts, nil
}

// stateWhere says where a resource's state lives, as status.state shows
// it: "local <state file>" or "pg schema <schema>, workspace <ws>".
func stateWhere(cfg config, t *converge.Task, l layout, s spec) string {
	if cfg.backendType() == backendPG {
		return "pg schema " + cfg.schema(t) + ", workspace " + s.workspace()
	}
	return "local " + l.stateFileOf(s.workspace())
}

// env is terraform's environment: the worker's own (without what tfexec
// manages), the provider's CLI configuration, then config.env, then the pg
// connection string.
func (re runEnv) env() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	env = tfexec.CleanEnv(env)
	env["TF_CLI_CONFIG_FILE"] = filepath.Join(re.root, cliConfigName)
	env["CHECKPOINT_DISABLE"] = "1"
	for k, v := range re.cfg.Env {
		env[k] = v
	}
	// The plugin cache is also given as a variable, so that it stays in
	// use when config.env names a CLI configuration of its own (a
	// provider mirror, say): otherwise every init copies every provider.
	if _, set := env["TF_PLUGIN_CACHE_DIR"]; !set {
		env["TF_PLUGIN_CACHE_DIR"] = filepath.Join(re.root, pluginCacheDir)
	}
	if b := re.cfg.Backend; b != nil && b.Type == backendPG && b.ConnStr != "" {
		env["PG_CONN_STR"] = b.ConnStr
	}
	return env
}

// guardStateMove refuses a run whose state is not where the last apply
// left it (spec.workspace or config.backend changed, or the state
// directory moved) when the new place holds nothing: applying would create
// everything again while the old resources live on, unmanaged. A state
// that was moved along (terraform state push) is found and used.
func (r *run) guardStateMove(ctx context.Context, previous string) error {
	if previous == "" || previous == r.where {
		return nil
	}
	st, err := r.tf.Show(ctx)
	if err != nil {
		return tfError("terraform show", err, nil)
	}
	if st.Values != nil && moduleHasResources(st.Values.RootModule) {
		return nil
	}
	return converge.Terminal(fmt.Errorf("state moved: the last apply kept the state at %s, but this run's is empty at %s "+
		"(spec.workspace or config.backend changed); applying would create everything again and leave the old resources unmanaged: "+
		"change it back, move the state there, or delete the resource first", previous, r.where))
}

// moduleHasResources reports whether a state module or any of its children
// holds a resource.
func moduleHasResources(m *tfjson.StateModule) bool {
	if m == nil {
		return false
	}
	if len(m.Resources) > 0 {
		return true
	}
	for _, c := range m.ChildModules {
		if moduleHasResources(c) {
			return true
		}
	}
	return false
}

// writeVars writes the spec's variables as the run's var file.
func (r *run) writeVars() error {
	if err := os.WriteFile(r.l.vars(), r.s.varsJSON(), 0o600); err != nil {
		return fmt.Errorf("writing the variables file: %w", err)
	}
	return nil
}

// tfError turns a failed terraform command into the task's error: terraform's
// message, trimmed, terminal when terminalIf says the output shows a mistake
// in the module or the spec. A cancelled context stays a plain (transient)
// error.
func tfError(what string, err error, terminalIf func(string) bool) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", what, err)
	}
	out := err.Error()
	e := fmt.Errorf("%s: %s", what, message(out))
	if terminalIf != nil && terminalIf(out) {
		return converge.Terminal(e)
	}
	return e
}

// validateMessage renders terraform validate's errors like message does,
// each located by its file and line in the module.
func validateMessage(diags []tfjson.Diagnostic) string {
	return diagnostics(diags, func(d tfjson.Diagnostic, s string) string {
		if d.Range != nil {
			s += fmt.Sprintf(" (%s line %d)", strings.ReplaceAll(d.Range.Filename, fromModuleDir, ""), d.Range.Start.Line)
		}
		return s
	})
}

// diagnostics renders terraform validate's errors, one part each: its
// summary as locate places it, then its detail.
func diagnostics(diags []tfjson.Diagnostic, locate func(d tfjson.Diagnostic, summary string) string) string {
	var parts []string
	for _, d := range diags {
		if d.Severity != tfjson.DiagnosticSeverityError {
			continue
		}
		s := locate(d, d.Summary)
		if d.Detail != "" {
			s += ": " + strings.Join(strings.Fields(d.Detail), " ")
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "terraform validate reported errors without details"
	}
	return truncate(strings.Join(parts, "; "))
}

// quote quotes a value for a message.
func quote(s string) string { return fmt.Sprintf("%q", s) }
