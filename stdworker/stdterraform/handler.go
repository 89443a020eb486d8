package stdterraform

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/convergehq/converge/sdk-go/converge"
)

// handler serves one kind version.
type handler struct {
	root     string
	baseDir  string
	settings config
	log      *slog.Logger
	locks    *locks
	inits    chan struct{} // see runEnv.inits
	// binding is a generated kind's resource type (see binding.go); nil
	// for a kind whose resources are modules (std.terraform).
	binding *Binding
	// statusFields are a generated kind's status_schema properties: the
	// attributes reported from the state.
	statusFields map[string]bool
	// versions caches the version each binary reports, by path.
	versions sync.Map
}

// begin decodes what every run needs and takes the resource's lock; the
// returned function releases it.
func (h *handler) begin(ctx context.Context, t *converge.Task) (runEnv, layout, func(), error) {
	cfgLayer, err := parseConfig(t.Config, "config")
	if err != nil {
		return runEnv{}, layout{}, nil, err
	}
	re := runEnv{root: h.root, baseDir: h.baseDir, cfg: h.settings.over(cfgLayer), inits: h.inits}
	l, err := resourceLayout(filepath.Join(h.root, "resources"), t.Namespace, t.Kind, t.Name)
	if err != nil {
		return runEnv{}, layout{}, nil, converge.Terminal(err)
	}
	unlock, err := h.locks.lock(ctx, t.Namespace+"/"+t.Kind+"/"+t.Name)
	if err != nil {
		return runEnv{}, layout{}, nil, err
	}
	return re, l, unlock, nil
}

// apply is the specChange (and resync) handler: init, apply, outputs.
func (h *handler) apply(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	s, err := parseSpec(t.Spec)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	re, l, unlock, err := h.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := prepare(ctx, re, t, l, s)
	if err != nil {
		return nil, err
	}
	if err := r.guardStateMove(ctx, h.previousState(t)); err != nil {
		return nil, err
	}
	if err := r.writeVars(); err != nil {
		return nil, err
	}
	if err := r.tf.Apply(ctx, varFile(l)); err != nil {
		return nil, tfError("terraform apply", err, variableError)
	}
	outputs, err := r.tf.Output(ctx)
	if err != nil {
		return nil, tfError("terraform output", err, nil)
	}
	status, err := newStatus(outputs, r.where, h.version(ctx, r))
	if err != nil {
		return nil, converge.Terminal(err)
	}
	h.log.Info("applied", "resource", t.Namespace+"/"+t.Name, "generation", t.Generation, "state", r.where)
	return &converge.Result{Status: status}, nil
}

// destroy is the deleteRequested handler. A resource whose local state
// holds nothing (it never applied, or its module never parsed) is done at
// once; otherwise the module is fetched again and destroyed, and only its
// empty state is left behind.
func (h *handler) destroy(ctx context.Context, t *converge.Task) (*converge.Result, error) {
	previous := h.previousState(t)
	s, err := parseSpec(t.Spec)
	if err != nil {
		if previous != "" {
			return nil, converge.Terminal(fmt.Errorf("cannot destroy the state at %s: %w", previous, err))
		}
		// No run of this spec ever reached terraform, so there is nothing
		// to destroy.
		h.log.Info("nothing to destroy: the spec never applied", "resource", t.Namespace+"/"+t.Name, "err", err)
		return nil, nil
	}
	re, l, unlock, err := h.begin(ctx, t)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if re.cfg.backendType() == backendLocal {
		empty, err := localStateEmpty(l, s.workspace())
		if err != nil {
			return nil, err
		}
		if where := stateWhere(re.cfg, t, l, s); empty && previous != "" && previous != where {
			return nil, fmt.Errorf("cannot destroy: the last apply kept the state at %s, but this run's is empty at %s "+
				"(spec.workspace or config.backend changed): change it back or move the state there, or quarantine the resource to give up on it", previous, where)
		}
		if empty {
			h.log.Info("nothing to destroy: the state is empty", "resource", t.Namespace+"/"+t.Name)
			return nil, cleanup(l)
		}
	}
	r, err := prepare(ctx, re, t, l, s)
	if err != nil {
		return nil, fmt.Errorf("cannot destroy: %w", err)
	}
	if err := r.guardStateMove(ctx, previous); err != nil {
		return nil, fmt.Errorf("cannot destroy: %w", err)
	}
	if err := r.writeVars(); err != nil {
		return nil, err
	}
	if err := r.tf.Destroy(ctx, varFile(l)); err != nil {
		return nil, tfError("terraform destroy", err, variableError)
	}
	h.log.Info("destroyed", "resource", t.Namespace+"/"+t.Name, "state", r.where)
	return nil, cleanup(l)
}

// previousState is where the last apply kept the resource's state, from
// its status (status.state, or a generated kind's status.terraform.state);
// "" before the first apply.
func (h *handler) previousState(t *converge.Task) string {
	if h.binding != nil {
		return previousMeta(t).State
	}
	var st struct {
		State string `json:"state"`
	}
	if err := t.DecodeStatus(&st); err != nil {
		return ""
	}
	return st.State
}

// version is the terraform version a run used, "" if it cannot be read.
// It is read once per binary: a process per run would cost every
// reconcile tens of milliseconds for the same answer.
func (h *handler) version(ctx context.Context, r *run) string {
	bin := r.tf.ExecPath()
	if v, ok := h.versions.Load(bin); ok {
		return v.(string)
	}
	v, _, err := r.tf.Version(ctx, false)
	if err != nil || v == nil {
		h.log.Warn("reading the terraform version", "err", err)
		return ""
	}
	h.versions.Store(bin, v.String())
	return v.String()
}

// cleanup removes what a destroyed resource leaves besides its state: the
// module and the variables. The (empty) state stays, as the record that
// the resource was destroyed.
func cleanup(l layout) error {
	for _, p := range []string{l.module(), l.vars()} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("removing %s: %w", p, err)
		}
	}
	return nil
}

// localStateEmpty reports whether the local state of workspace ws holds no
// resources (or does not exist).
func localStateEmpty(l layout, ws string) (bool, error) {
	path := l.stateFileOf(ws)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the state: %w", err)
	}
	var st struct {
		Resources []json.RawMessage `json:"resources"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return false, fmt.Errorf("state %s: %w", path, err)
	}
	return len(st.Resources) == 0, nil
}
