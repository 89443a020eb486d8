// Package stdshell is stdworker's provider of the std.shell kind: a resource
// whose spec carries a script, run whenever the spec changes.
//
// The script is written to a file and run as `interpreter FILE args...`,
// in a process group of its own, killed whole at spec.timeout_seconds (then
// retried) or at the task's deadline. Exit 0 makes the resource Ready with
// status {exit_code, stdout_tail, stderr_tail, ran_at, duration_ms}; exit 2
// fails it terminally; any other exit is retried. A failure's message
// carries the exit code and the end of stderr. A missing interpreter is
// terminal.
//
// Defaults come, in order, from the spec, the kind's provider config
// (config_schema: interpreter, env, timeout_seconds) and the provider's
// settings in the stdworker configuration (the same three keys); the last
// resort is /bin/sh with no timeout but the task deadline.
package stdshell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/stdworker/internal/proc"
	"github.com/convergehq/converge/stdworker/provider"
)

// Name is the provider's name in the stdworker configuration.
const Name = "stdshell"

// Kind and Version name the kind the provider serves.
const (
	Kind    = "std.shell"
	Version = 1
)

// DefaultInterpreter runs scripts when neither the spec, the provider config
// nor the settings name an interpreter.
const DefaultInterpreter = "/bin/sh"

// TailBytes bounds status.stdout_tail and status.stderr_tail.
const TailBytes = 4096

// Spec is a std.shell resource's spec.
type Spec struct {
	Script         string            `json:"script"`
	Interpreter    string            `json:"interpreter,omitempty"`
	Args           []string          `json:"args,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
}

// Defaults are the provider config's keys, and the settings' keys.
type Defaults struct {
	Interpreter    string            `json:"interpreter,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
}

// Status is what a successful run reports.
type Status struct {
	ExitCode   int    `json:"exit_code"`
	StdoutTail string `json:"stdout_tail"`
	StderrTail string `json:"stderr_tail"`
	RanAt      string `json:"ran_at"`
	DurationMS int64  `json:"duration_ms"`
}

type shell struct{}

// New returns the stdshell provider.
func New() provider.Provider { return shell{} }

func (shell) Name() string { return Name }

// Register serves the kind's specChange reaction. It refuses any other
// reaction: std.shell has only one.
func (shell) Register(_ context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	m := s.Manifest
	ref := fmt.Sprintf("%s@%d", m.GetKind(), m.GetKindVersion())
	settings, err := decodeDefaults(s.Settings)
	if err != nil {
		return fmt.Errorf("%s: settings: %w", ref, err)
	}
	scripts := filepath.Join(env.StateDir, "scripts")
	if err := os.MkdirAll(scripts, 0o700); err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	served := 0
	for _, r := range m.GetReactions() {
		if r.GetTrigger() != "specChange" {
			return fmt.Errorf("%s: reaction %q (trigger %s): stdshell serves only a specChange reaction", ref, r.GetName(), r.GetTrigger())
		}
		h := &handler{settings: settings, scripts: scripts}
		w.Handle(m.GetKind(), int(m.GetKindVersion()), r.GetName(), h.run)
		served++
	}
	if served == 0 {
		return fmt.Errorf("%s: the manifest has no specChange reaction to serve", ref)
	}
	return nil
}

func decodeDefaults(raw json.RawMessage) (Defaults, error) {
	var d Defaults
	if len(raw) == 0 {
		return d, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return d, nil
}

type handler struct {
	settings Defaults
	scripts  string
}

func (h *handler) run(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	var spec Spec
	if err := strictDecode(t.Spec, &spec); err != nil {
		return nil, converge.Terminal(fmt.Errorf("spec: %w", err))
	}
	if spec.Script == "" {
		return nil, converge.Terminal(errors.New("spec.script: empty: give the script to run"))
	}
	var cfg Defaults
	if err := t.DecodeConfig(&cfg); err != nil {
		return nil, converge.Terminal(fmt.Errorf("provider config: %w", err))
	}
	interp, from := pick(spec.Interpreter, "spec.interpreter", cfg.Interpreter, "the provider config's interpreter",
		h.settings.Interpreter, "the stdworker settings' interpreter", DefaultInterpreter, "the default interpreter")
	words := strings.Fields(interp)
	if len(words) == 0 {
		return nil, converge.Terminal(fmt.Errorf("%s: empty", from))
	}
	if _, err := exec.LookPath(words[0]); err != nil {
		return nil, converge.Terminal(fmt.Errorf("interpreter %q (%s) not found: %w", words[0], from, err))
	}
	timeout := firstPositive(spec.TimeoutSeconds, cfg.TimeoutSeconds, h.settings.TimeoutSeconds)

	file, err := h.writeScript(spec.Script)
	if err != nil {
		return nil, err
	}
	defer os.Remove(file)
	args := append(append(words[1:len(words):len(words)], file), spec.Args...)
	res, err := proc.Run(ctx, proc.Spec{
		Path: words[0], Args: args, Dir: h.scripts,
		Env:     environ(h.settings.Env, cfg.Env, spec.Env),
		Timeout: time.Duration(timeout) * time.Second,
		// The script's output is its log: keep its tail, never fail on it.
		MaxStdout: TailBytes, StdoutTail: true, StderrTail: TailBytes,
	})
	if err != nil {
		return nil, err
	}
	return &converge.Result{Status: Status{
		ExitCode:   res.ExitCode,
		StdoutTail: proc.ValidTail(res.Stdout),
		StderrTail: res.StderrTail,
		RanAt:      time.Now().Add(-res.Duration).UTC().Format(time.RFC3339),
		DurationMS: res.Duration.Milliseconds(),
	}}, nil
}

// writeScript writes the script to a file of its own.
func (h *handler) writeScript(script string) (string, error) {
	f, err := os.CreateTemp(h.scripts, "script-*")
	if err != nil {
		return "", fmt.Errorf("writing the script: %w", err)
	}
	_, werr := f.WriteString(script)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("writing the script: %w", err)
	}
	return f.Name(), nil
}

func strictDecode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return nil
}

// pick returns the first non-empty value of (value, source) pairs.
func pick(pairs ...string) (value, source string) {
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i]) != "" {
			return pairs[i], pairs[i+1]
		}
	}
	return "", ""
}

func firstPositive(vs ...int) int {
	for _, v := range vs {
		if v > 0 {
			return v
		}
	}
	return 0
}

// environ is stdworker's environment with the layers on top, later ones
// winning, in a stable order.
func environ(layers ...map[string]string) []string {
	merged := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			merged[k] = v
		}
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := os.Environ()
	for _, k := range keys {
		out = append(out, k+"="+merged[k])
	}
	return out
}
