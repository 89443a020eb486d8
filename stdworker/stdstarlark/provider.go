package stdstarlark

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/stdworker/provider"
)

// Name is the provider's name in stdworker's configuration.
const Name = "stdstarlark"

// DefaultMain is the bundle file run when settings give no main.
const DefaultMain = "main.star"

// Option configures the provider.
type Option func(*starlarkProvider)

// WithBaseDir makes relative settings.dir paths relative to dir (stdworker
// passes its configuration file's directory) instead of the working
// directory.
func WithBaseDir(dir string) Option {
	return func(p *starlarkProvider) { p.baseDir = dir }
}

// New returns the stdstarlark provider.
func New(opts ...Option) provider.Provider {
	p := &starlarkProvider{}
	for _, o := range opts {
		o(p)
	}
	return p
}

type starlarkProvider struct {
	baseDir string
}

// Name implements provider.Provider.
func (*starlarkProvider) Name() string { return Name }

// settings are the provider's settings for one kind.
type settings struct {
	// Dir is the bundle directory.
	Dir string `json:"dir"`
	// Main is the file, relative to Dir, that defines compose(ctx).
	Main string `json:"main"`
	// MaxSteps is the step limit of one run; 0 means DefaultMaxSteps.
	MaxSteps uint64 `json:"max_steps"`
}

// maxMaxSteps bounds settings.max_steps.
const maxMaxSteps = 10_000_000_000

// parseSettings decodes and checks settings; errors name the field.
func parseSettings(raw json.RawMessage) (settings, error) {
	var s settings
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if len(bytes.TrimSpace(raw)) == 0 {
		return s, fmt.Errorf("settings.dir: required: the bundle directory")
	}
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("settings: %w", err)
	}
	if s.Dir == "" {
		return s, fmt.Errorf("settings.dir: required: the bundle directory")
	}
	if s.Main == "" {
		s.Main = DefaultMain
	}
	clean := path.Clean(s.Main)
	if !filepath.IsLocal(clean) || path.Ext(clean) != ".star" {
		return s, fmt.Errorf("settings.main: %q must be a .star file inside the bundle", s.Main)
	}
	s.Main = clean
	if s.MaxSteps > maxMaxSteps {
		return s, fmt.Errorf("settings.max_steps: %d is more than %d", s.MaxSteps, uint64(maxMaxSteps))
	}
	if s.MaxSteps == 0 {
		s.MaxSteps = DefaultMaxSteps
	}
	return s, nil
}

// Register implements provider.Provider: a specChange reaction runs
// compose(ctx), a childrenSettled reaction rollup(ctx). The bundle is read
// again by every task, so edits to it apply without a restart; a syntax
// error in it fails the resources it composes, naming the position.
func (sp *starlarkProvider) Register(_ context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	m := s.Manifest
	kind, version := m.GetKind(), int(m.GetKindVersion())
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s %s@%d: %s", Name, kind, version, fmt.Sprintf(format, args...))
	}
	set, err := parseSettings(s.Settings)
	if err != nil {
		return fail("%v", err)
	}
	dir := set.Dir
	if !filepath.IsAbs(dir) {
		base := sp.baseDir
		if base == "" {
			if base, err = os.Getwd(); err != nil {
				return fail("the working directory: %v", err)
			}
		}
		dir = filepath.Join(base, dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fail("settings.dir: %s is not a directory", dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, set.Main)); err != nil || fi.IsDir() {
		return fail("settings.main: %s is not a file of the bundle %s", set.Main, dir)
	}
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &program{dir: dir, main: set.Main, maxSteps: set.MaxSteps, programs: &programs{}, log: log.With("provider", Name, "kind", kind, "version", version)}

	type reg struct {
		name string
		fn   converge.HandlerFunc
	}
	var regs []reg
	for _, r := range m.GetReactions() {
		emits := r.GetEmits()
		switch r.GetTrigger() {
		case "specChange":
			regs = append(regs, reg{r.GetName(), p.composeHandler(slices.Contains(emits, "children"))})
		case "childrenSettled":
			regs = append(regs, reg{r.GetName(), p.rollupHandler})
		default:
			return fail("reaction %q: trigger %s is not served (stdstarlark serves specChange with compose(ctx) and childrenSettled with rollup(ctx))", r.GetName(), r.GetTrigger())
		}
	}
	if len(regs) == 0 {
		return fail("the kind has no specChange reaction to serve")
	}
	for _, r := range regs {
		w.Handle(kind, version, r.name, r.fn)
	}
	return nil
}

// composeHandler runs compose(ctx) for a specChange reaction; composes
// says whether the reaction emits children.
func (p *program) composeHandler(composes bool) converge.HandlerFunc {
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		arg, err := taskValue(t, nil)
		if err != nil {
			return nil, converge.Terminal(err)
		}
		out, fn, err := p.call(ctx, t.Namespace+"/"+t.Kind+"/"+t.Name, "compose", arg)
		if err != nil {
			return nil, err
		}
		res, err := composeResult(out, composes)
		if err != nil {
			return nil, converge.Terminal(fmt.Errorf("%s: compose(ctx) returned a bad result: %w", fn.Position(), err))
		}
		return res, nil
	}
}

// rollupHandler runs rollup(ctx) for a childrenSettled reaction.
func (p *program) rollupHandler(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	arg, err := taskValue(t, t.Rollup)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	out, fn, err := p.call(ctx, t.Namespace+"/"+t.Kind+"/"+t.Name, "rollup", arg)
	if err != nil {
		return nil, err
	}
	st, err := statusJSON(out)
	if err != nil {
		return nil, converge.Terminal(fmt.Errorf("%s: rollup(ctx) returned a bad result: %w", fn.Position(), err))
	}
	if st == nil {
		return nil, nil // leave the status as it is
	}
	return &converge.Result{Status: st}, nil
}

// taskValue is the ctx argument of compose and rollup: the resource's
// identity, spec, status, labels and effective config, and whether it is
// a plan's preview, frozen; with the children's summary for rollup.
func taskValue(t *converge.Task, rollup *converge.Rollup) (starlark.Value, error) {
	spec, err := fromJSON(t.Spec)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	status, err := fromJSON(t.Status)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	config, err := fromJSON(t.Config)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	labels := starlark.NewDict(len(t.Labels))
	keys := make([]string, 0, len(t.Labels))
	for k := range t.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		_ = labels.SetKey(starlark.String(k), starlark.String(t.Labels[k]))
	}
	fields := starlark.StringDict{
		"name":       starlark.String(t.Name),
		"namespace":  starlark.String(t.Namespace),
		"kind":       starlark.String(t.Kind),
		"version":    starlark.MakeInt(t.KindVersion),
		"generation": starlark.MakeInt64(t.Generation),
		"labels":     labels,
		"spec":       spec,
		"status":     status,
		"config":     config,
		// A bundle is sandboxed and has no side effects to skip; preview
		// only tells it that its answer is for a plan.
		"preview": starlark.Bool(t.Preview()),
	}
	if rollup != nil {
		fields["rollup"] = rollupValue(rollup)
	}
	v := starlarkstruct.FromStringDict(starlark.String("ctx"), fields)
	v.Freeze()
	return v, nil
}

// rollupValue is ctx.rollup: the children's counts by phase and the
// culprits.
func rollupValue(r *converge.Rollup) starlark.Value {
	culprits := make([]starlark.Value, len(r.Culprits))
	for i, c := range r.Culprits {
		culprits[i] = starlarkstruct.FromStringDict(starlark.String("culprit"), starlark.StringDict{
			"kind":    starlark.String(c.Resource.Kind),
			"name":    starlark.String(c.Resource.Name),
			"phase":   starlark.String(c.Phase),
			"message": starlark.String(c.Message),
		})
	}
	return starlarkstruct.FromStringDict(starlark.String("rollup"), starlark.StringDict{
		"total":       starlark.MakeInt(r.Total),
		"ready":       starlark.MakeInt(r.Ready),
		"reconciling": starlark.MakeInt(r.Reconciling),
		"degraded":    starlark.MakeInt(r.Degraded),
		"failed":      starlark.MakeInt(r.Failed),
		"deleting":    starlark.MakeInt(r.Deleting),
		"excluded":    starlark.MakeInt(r.Excluded),
		"culprits":    starlark.NewList(culprits),
	})
}
