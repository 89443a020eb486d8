// Package stdio is stdworker's provider that serves a user-defined kind with
// any external program: for every task it runs the program, writes a JSON
// Request on its stdin and reads a JSON Response from its stdout.
//
// Exit 0 is success (the response is applied); exit 2 is a terminal failure;
// any other exit is transient and retried. The message of a failure carries
// the exit code and the end of the program's stderr. The program runs in a
// process group of its own, killed whole at the task's deadline, on a cancel
// and on a drain that outlasts its timeout. Its stdout is capped at 1 MiB;
// output that is not a protocol response is a terminal error quoting it.
// See docs/stdworker.md for the protocol.
//
// The stdworker configuration names the program per kind:
//
//	kinds:
//	  - kind: backup
//	    version: 1
//	    provider: stdio
//	    settings: {command: ["./backup.sh", "--verbose"], timeout_seconds: 60}
package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/internal/proc"
	"github.com/convergehq/converge/stdworker/provider"
)

// Name is the provider's name in the stdworker configuration.
const Name = "stdio"

// Settings are the provider's settings for one kind, from the stdworker
// configuration file.
type Settings struct {
	// Command is the program and its arguments. A relative path with a
	// slash is resolved against the base directory (WithBaseDir); a bare
	// name is looked up on PATH.
	Command []string `json:"command"`
	// Dir is the working directory, relative to the base directory;
	// default the base directory.
	Dir string `json:"dir,omitempty"`
	// Env adds to the environment stdworker runs in.
	Env map[string]string `json:"env,omitempty"`
	// TimeoutSeconds kills the program (and retries) after this long;
	// 0 means only the task deadline bounds it.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// KillGraceSeconds is the time between SIGTERM and SIGKILL; 0 means 5.
	KillGraceSeconds int `json:"kill_grace_seconds,omitempty"`
}

// Option configures the provider.
type Option func(*stdio)

// WithBaseDir sets the directory relative paths in settings are resolved
// against: stdworker passes its configuration file's directory. The default
// is the working directory.
func WithBaseDir(dir string) Option { return func(s *stdio) { s.baseDir = dir } }

type stdio struct {
	baseDir string
}

// New returns the stdio provider.
func New(opts ...Option) provider.Provider {
	s := &stdio{}
	for _, o := range opts {
		o(s)
	}
	return s
}

func (s *stdio) Name() string { return Name }

// Register serves every reaction of the kind with the program the settings
// name.
func (s *stdio) Register(_ context.Context, w *converge.Worker, served provider.Served, env provider.Env) error {
	m := served.Manifest
	ref := fmt.Sprintf("%s@%d", m.GetKind(), m.GetKindVersion())
	prog, err := s.program(served.Settings)
	if err != nil {
		return fmt.Errorf("%s: settings.%w", ref, err)
	}
	if len(m.GetReactions()) == 0 {
		return fmt.Errorf("%s: the manifest has no reactions to serve", ref)
	}
	for _, r := range m.GetReactions() {
		w.Handle(m.GetKind(), int(m.GetKindVersion()), r.GetName(), prog.handler(r))
	}
	return nil
}

// Handler returns the handler that serves reaction r by running the program
// settings name, as Register does for every reaction of a kind: for a Go
// worker that wants one of its reactions served by a program.
func Handler(settings Settings, r *convergev1.Reaction, opts ...Option) (converge.HandlerFunc, error) {
	raw, err := json.Marshal(settings)
	if err != nil {
		return nil, err
	}
	s := New(opts...).(*stdio)
	prog, err := s.program(raw)
	if err != nil {
		return nil, fmt.Errorf("settings.%w", err)
	}
	return prog.handler(r), nil
}

// program is a resolved Settings.
type program struct {
	spec proc.Spec
}

func (s *stdio) program(raw json.RawMessage) (*program, error) {
	var set Settings
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&set); err != nil {
			return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if len(set.Command) == 0 || set.Command[0] == "" {
		return nil, errors.New(`command: name the program to run, e.g. command: ["./backup.sh"]`)
	}
	if set.TimeoutSeconds < 0 || set.KillGraceSeconds < 0 {
		return nil, errors.New("timeout_seconds, kill_grace_seconds: must not be negative")
	}
	base := s.baseDir
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("dir: %w", err)
		}
		base = wd
	}
	path := set.Command[0]
	if strings.Contains(path, "/") && !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	dir := base
	if set.Dir != "" {
		dir = set.Dir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(base, dir)
		}
	}
	envv := os.Environ()
	for k, v := range set.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("env: %q is not an environment variable name", k)
		}
		envv = append(envv, k+"="+v)
	}
	return &program{spec: proc.Spec{
		Path: path, Name: set.Command[0], Args: set.Command[1:], Dir: dir, Env: envv,
		Timeout:   time.Duration(set.TimeoutSeconds) * time.Second,
		KillGrace: time.Duration(set.KillGraceSeconds) * time.Second,
	}}, nil
}

// ExitImportNotFound is the exit code by which a program says the object
// its resource imports (the request's import_id) does not exist: a
// terminal failure with reason ImportNotFound naming the id. For a
// resource that imports nothing it is an exit like any other (transient).
const ExitImportNotFound = 3

// handler runs the program for one reaction.
func (p *program) handler(r *convergev1.Reaction) converge.HandlerFunc {
	emits := r.GetEmits()
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		req, err := json.Marshal(NewRequest(t, emits))
		if err != nil {
			return nil, converge.Terminal(fmt.Errorf("stdio: encoding the request: %w", err))
		}
		spec := p.spec
		spec.Stdin = req
		res, err := proc.Run(ctx, spec)
		var exit *proc.ExitError
		if errors.As(err, &exit) && exit.Code == ExitImportNotFound && exit.Signal == 0 && t.ImportID != "" {
			return nil, converge.ImportNotFound(t.ImportID, err)
		}
		if err != nil {
			return nil, err
		}
		resp, err := ParseResponse(res.Stdout)
		if err != nil {
			return nil, converge.Terminal(fmt.Errorf("program %q: %w", spec.Name, err))
		}
		out, err := resp.Result(t.Trigger, emits)
		if err != nil {
			return nil, converge.Terminal(fmt.Errorf("program %q: %w", spec.Name, err))
		}
		return out, nil
	}
}
