// Package kinds keeps every replica's view of the registered kinds:
// compiled manifests with their schemas and reactions, reloaded within a
// second of any change anywhere.
package kinds

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// RefreshInterval bounds how stale a replica's view can be when a wake-up
// is lost.
const RefreshInterval = time.Second

// Entry is one registered kind version.
type Entry struct {
	Kind     string
	Version  int32
	Revision int64
	// Compiled is the compiled manifest (schemas, policy, reactions).
	Compiled *manifest.Kind
	// Row is the stored form.
	Row store.Kind

	// reactions maps a task trigger to the reaction that runs it. An
	// operation's trigger is "operation:<verb>"; resync falls back to the
	// specChange reaction when the kind has no resync reaction of its own.
	reactions  map[string]Reaction
	triggersOf map[string][]string
}

// Reaction is a manifest reaction in the form dispatch needs.
type Reaction struct {
	Name string
	// Trigger is the manifest's trigger (operation for every verb).
	Trigger string
	Emits   map[string]bool
	// Verb is the operation verb an operation reaction implements.
	Verb string
}

// Reaction returns the reaction a trigger runs.
func (e *Entry) Reaction(trigger string) (Reaction, bool) {
	r, ok := e.reactions[trigger]
	return r, ok
}

// TriggersOf returns the task triggers the named reaction runs (more than
// one when it also serves resync).
func (e *Entry) TriggersOf(reaction string) []string { return e.triggersOf[reaction] }

// ResyncInterval is how often settled resources of this kind are
// re-observed; 0 when never (no interval, or no reaction to run it: a
// composer's resync re-runs it only when policy.resync_recomposes is set).
func (e *Entry) ResyncInterval() time.Duration {
	if _, ok := e.reactions[trigger.Resync]; !ok {
		return 0
	}
	return e.Compiled.Policy.ResyncInterval
}

// ObserveInterval is how often observed resources of this kind are
// re-observed by its observe reaction; 0 when never (no interval, or no
// observe reaction).
func (e *Entry) ObserveInterval() time.Duration {
	if !e.Observes() {
		return 0
	}
	return e.Compiled.Policy.ResyncInterval
}

// Observes reports whether the kind has an observe reaction: only then may
// its resources be observed.
func (e *Entry) Observes() bool {
	_, ok := e.reactions[trigger.Observe]
	return ok
}

// MaxInflight caps this kind version's tasks in flight across replicas
// (0: no cap).
func (e *Entry) MaxInflight() int32 { return e.Row.Policy.MaxInflight }

// FirstSecret names the first schema of the kind version that declares
// a secret property, and where ("status_schema /password"), or "".
func (e *Entry) FirstSecret() string {
	for _, s := range []struct {
		name string
		sch  *schema.Schema
	}{{"spec_schema", e.Compiled.Spec}, {"status_schema", e.Compiled.Status}, {"config_schema", e.Compiled.Config}} {
		if ps := s.sch.Secrets(); len(ps) > 0 {
			return s.name + " " + ps[0].String()
		}
	}
	return ""
}

// ValidateSpec checks a decoded spec against the spec schema.
func (e *Entry) ValidateSpec(doc any) error { return e.Compiled.Spec.Validate(doc) }

// ValidateStatus checks a decoded status against the status schema.
func (e *Entry) ValidateStatus(doc any) error { return e.Compiled.Status.Validate(doc) }

// TaskDeadline is the time a worker has for one task of this kind.
func (e *Entry) TaskDeadline() time.Duration { return e.Compiled.Policy.TaskDeadline }

// HasTeardown reports whether deleting a resource runs a deleteRequested
// reaction before the resource goes.
func (e *Entry) HasTeardown() bool {
	_, ok := e.reactions[trigger.DeleteRequested]
	return ok
}

// Teardown says how resources of this kind are torn down.
func (e *Entry) Teardown() store.TeardownPolicy {
	return store.TeardownPolicy{Reaction: e.HasTeardown(), Retain: e.Row.Policy.DeletionPolicy == "retain"}
}

// Composes reports whether the kind has a composer reaction.
func (e *Entry) Composes() bool {
	r, ok := e.reactions[trigger.SpecChange]
	return ok && r.Emits[manifest.EmitChildren]
}

// SettledReaction reports whether the kind computes its own status once
// its children settle.
func (e *Entry) SettledReaction() bool {
	_, ok := e.reactions[trigger.ChildrenSettled]
	return ok
}

// Manifest returns the manifest as the API shows it, with policy and
// output-only fields filled in. Callers must not modify it.
func (e *Entry) Manifest() *convergev1.KindManifest { return e.Compiled.Manifest }

// Compile builds an entry from a stored kind.
func Compile(row store.Kind) (*Entry, error) {
	m, err := manifest.FromCanonical(row.Manifest)
	if err != nil {
		return nil, err
	}
	m.Policy = PolicyToProto(row.Policy)
	m.Revision = row.Revision
	m.CreatedAt, m.UpdatedAt = timestamp(row.CreatedAt), timestamp(row.UpdatedAt)
	k, err := manifest.Compile(m)
	if err != nil {
		return nil, err
	}
	e := &Entry{Kind: row.Kind, Version: row.Version, Revision: row.Revision, Compiled: k, Row: row,
		reactions: map[string]Reaction{}, triggersOf: map[string][]string{}}
	add := func(trigger string, r Reaction) {
		e.reactions[trigger] = r
		e.triggersOf[r.Name] = append(e.triggersOf[r.Name], trigger)
	}
	for _, r := range m.GetReactions() {
		emits := map[string]bool{}
		for _, p := range r.GetEmits() {
			emits[p] = true
		}
		trig := r.GetTrigger()
		if trig == trigger.Operation {
			trig = trigger.OfOperation(r.GetVerb())
		}
		add(trig, Reaction{Name: r.GetName(), Trigger: r.GetTrigger(), Emits: emits, Verb: r.GetVerb()})
	}
	if _, own := e.reactions[trigger.Resync]; !own && k.Policy.ResyncInterval > 0 {
		if r, ok := e.reactions[trigger.SpecChange]; ok && (!r.Emits[manifest.EmitChildren] || k.Policy.ResyncRecomposes) {
			add(trigger.Resync, r)
		}
	}
	return e, nil
}

type key struct {
	kind    string
	version int32
}

// Registry caches the compiled kinds.
type Registry struct {
	store *store.Store
	bus   *notify.Bus
	log   *slog.Logger

	// refreshing serialises Refresh: two loads racing could otherwise
	// store the older view last.
	refreshing sync.Mutex

	mu          sync.RWMutex
	entries     map[key]*Entry
	configs     map[key]providerConfigs
	fingerprint string
	anyResync   bool

	subMu sync.Mutex
	subs  map[chan struct{}]struct{}

	// secrets seals and opens secret values; nil when the server has no
	// secret key (then no kind may declare a secret).
	secrets *secret.Keyring
}

// UseSecrets sets the keyring of secret values, once, before the
// registry is shared.
func (r *Registry) UseSecrets(k *secret.Keyring) { r.secrets = k }

// Secrets returns the keyring of secret values, nil without a key.
func (r *Registry) Secrets() *secret.Keyring { return r.secrets }

// FirstSecret names a registered kind version declaring a secret
// property, and where ("data.db v1 status_schema /password"), or "".
func (r *Registry) FirstSecret() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var found []string
	for _, e := range r.entries {
		if w := e.FirstSecret(); w != "" {
			found = append(found, fmt.Sprintf("%s v%d %s", e.Kind, e.Version, w))
		}
	}
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// New returns an empty registry; call Refresh or Run to fill it.
func New(st *store.Store, bus *notify.Bus, log *slog.Logger) *Registry {
	return &Registry{store: st, bus: bus, log: log, entries: map[key]*Entry{}, subs: map[chan struct{}]struct{}{}}
}

// Get returns a kind version, or nil if it is not registered.
func (r *Registry) Get(kind string, version int32) *Entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.entries[key{kind, version}]
}

// AnyResync reports whether any kind version re-observes its resources:
// while none does, nothing looks for due resyncs at all.
func (r *Registry) AnyResync() bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.anyResync
}

// Subscribe returns a channel woken after every change of the view.
func (r *Registry) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.subMu.Lock()
	r.subs[ch] = struct{}{}
	r.subMu.Unlock()
	return ch, func() {
		r.subMu.Lock()
		delete(r.subs, ch)
		r.subMu.Unlock()
	}
}

// Name implements service.Service.
func (*Registry) Name() string { return "kinds registry" }

// Run keeps the view fresh: on every wake-up and at least every
// RefreshInterval.
func (r *Registry) Run(ctx context.Context) {
	wake, stop := r.bus.Subscribe(notify.Kinds)
	defer stop()
	tick := time.NewTicker(RefreshInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
		if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("refreshing kinds failed", "err", err)
		}
	}
}

// Refresh reloads the view if any kind changed since the last load.
func (r *Registry) Refresh(ctx context.Context) error {
	if store.Uncommitted(ctx) {
		return nil // a dry run's writes are rolled back; others load once committed
	}
	r.refreshing.Lock()
	defer r.refreshing.Unlock()
	fp, err := r.store.KindsFingerprint(ctx)
	if err != nil {
		return err
	}
	r.mu.RLock()
	same := fp == r.fingerprint
	r.mu.RUnlock()
	if same {
		return nil
	}
	rows, err := r.store.ListKinds(ctx, "")
	if err != nil {
		return err
	}
	next := make(map[key]*Entry, len(rows))
	r.mu.RLock()
	prev := r.entries
	r.mu.RUnlock()
	for _, row := range rows {
		k := key{row.Kind, row.Version}
		if old := prev[k]; old != nil && old.Revision == row.Revision && old.Row.UpdatedAt.Equal(row.UpdatedAt) {
			next[k] = old
			continue
		}
		e, err := Compile(row)
		if err != nil {
			r.log.Error("a stored manifest does not compile; ignoring it", "kind", row.Kind, "version", row.Version, "err", err)
			continue
		}
		next[k] = e
	}
	configs, err := r.loadConfigs(ctx)
	if err != nil {
		return err
	}
	anyResync := false
	for _, e := range next {
		anyResync = anyResync || e.ResyncInterval() > 0 || e.ObserveInterval() > 0
	}
	r.mu.Lock()
	r.entries, r.configs, r.fingerprint, r.anyResync = next, configs, fp, anyResync
	r.mu.Unlock()
	r.subMu.Lock()
	for ch := range r.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	r.subMu.Unlock()
	return nil
}

// Owners maps each registered kind to the owner team of its latest
// version (kinds without an owner are left out): a kind's owner team
// reads its kind's resources in every namespace.
func (r *Registry) Owners() map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	latest := map[string]*Entry{}
	for k, e := range r.entries {
		if cur, ok := latest[k.kind]; !ok || e.Version > cur.Version {
			latest[k.kind] = e
		}
	}
	out := make(map[string]string, len(latest))
	for kind, e := range latest {
		if owner := e.Manifest().GetOwner(); owner != "" {
			out[kind] = owner
		}
	}
	return out
}
