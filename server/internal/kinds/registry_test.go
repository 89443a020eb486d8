package kinds_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/service"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type env struct {
	t   *testing.T
	ctx context.Context
	st  *store.Store
	bus *notify.Bus
	reg *kinds.Registry
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := pgtest.New(t)
	e := &env{t: t, ctx: context.Background(), st: store.New(db.Pool, db.Pool)}
	e.bus = notify.New(db.Pool, "test", 1000, quiet)
	e.reg = kinds.New(e.st, e.bus, quiet)
	return e
}

func (e *env) refresh() {
	e.t.Helper()
	if err := e.reg.Refresh(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// leaf is a kind with one reconcile reaction and the given policy.
func leaf(t *testing.T, name string, p *convergev1.KindPolicy, reactions ...*convergev1.Reaction) *convergev1.KindManifest {
	if len(reactions) == 0 {
		reactions = []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}
	}
	return &convergev1.KindManifest{Kind: name, KindVersion: 1, SpecSchema: testkit.Object(t), Reactions: reactions, Policy: p}
}

// TestRefreshPicksUpAppliedKinds: a kind applied to the store is in the
// view after Refresh, at its stored revision; a changed manifest replaces
// it; a refresh that finds nothing changed keeps the compiled entry.
func TestRefreshPicksUpAppliedKinds(t *testing.T) {
	e := newEnv(t)
	e.refresh()
	if e.reg.Get("greeting", 1) != nil {
		t.Fatal("an empty database gave a kind")
	}
	row := testkit.ApplyKind(t, e.st, leaf(t, "greeting", nil))
	if e.reg.Get("greeting", 1) != nil {
		t.Fatal("the view changed before a refresh")
	}
	e.refresh()
	first := e.reg.Get("greeting", 1)
	if first == nil || first.Revision != row.Revision || first.Kind != "greeting" || first.Compiled == nil {
		t.Fatalf("entry after refresh = %+v; want greeting at revision %d", first, row.Revision)
	}
	e.refresh()
	if e.reg.Get("greeting", 1) != first {
		t.Fatal("a refresh with nothing changed compiled the kind again")
	}
	row = testkit.ApplyKind(t, e.st, leaf(t, "greeting", nil,
		&convergev1.Reaction{Name: "observe", Trigger: "specChange", Emits: []string{"status", "conditions"}}))
	e.refresh()
	next := e.reg.Get("greeting", 1)
	if next == first || next.Revision != row.Revision || len(next.TriggersOf("observe")) != 1 || len(next.TriggersOf("reconcile")) != 0 {
		t.Fatalf("entry after a manifest change = %+v; want the new reaction at revision %d", next, row.Revision)
	}
}

// TestEntryAnswersFromItsManifestAndPolicy: reactions by trigger (resync
// served by the specChange reaction unless the kind has its own, never a
// composer's without resync_recomposes; operations by verb), and the
// policy's cap, resync interval and deadline.
func TestEntryAnswersFromItsManifestAndPolicy(t *testing.T) {
	e := newEnv(t)
	testkit.ApplyKind(t, e.st, leaf(t, "plain", nil))
	e.refresh()
	if e.reg.AnyResync() {
		t.Fatal("AnyResync with no kind resyncing")
	}
	m := leaf(t, "drifty", &convergev1.KindPolicy{ResyncIntervalSeconds: 60, MaxInflight: 3, TaskDeadlineSeconds: 10},
		&convergev1.Reaction{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}},
		&convergev1.Reaction{Name: "restart", Trigger: "operation", Verb: "restart", Emits: []string{"operationOutput"}})
	m.Operations = []*convergev1.OperationDecl{{Verb: "restart", InputSchema: testkit.Object(t)}}
	testkit.ApplyKind(t, e.st, m)
	testkit.ApplyKind(t, e.st, &convergev1.KindManifest{Kind: "stack", KindVersion: 1, SpecSchema: testkit.Object(t),
		Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "status"}}},
		Policy:    &convergev1.KindPolicy{ResyncIntervalSeconds: 60}})
	e.refresh()

	plain, stack := e.reg.Get("plain", 1), e.reg.Get("stack", 1)
	drifty := e.reg.Get("drifty", 1)
	if got := plain.TriggersOf("reconcile"); !slices.Equal(got, []string{trigger.SpecChange}) {
		t.Errorf("plain: reconcile runs %v, want specChange alone", got)
	}
	if plain.ResyncInterval() != 0 || plain.MaxInflight() != 0 {
		t.Errorf("plain: resync %s, cap %d; want none", plain.ResyncInterval(), plain.MaxInflight())
	}
	if got := drifty.TriggersOf("reconcile"); !slices.Equal(got, []string{trigger.SpecChange, trigger.Resync}) {
		t.Errorf("drifty: reconcile runs %v, want specChange and resync", got)
	}
	if r, ok := drifty.Reaction(trigger.Resync); !ok || r.Name != "reconcile" {
		t.Errorf("drifty: resync runs %+v, want reconcile", r)
	}
	if r, ok := drifty.Reaction(trigger.OperationPrefix + "restart"); !ok || r.Name != "restart" || r.Verb != "restart" {
		t.Errorf("drifty: operation:restart runs %+v, want restart", r)
	}
	if drifty.ResyncInterval() != time.Minute || drifty.MaxInflight() != 3 || drifty.TaskDeadline() != 10*time.Second {
		t.Errorf("drifty: resync %s, cap %d, deadline %s; want 1m, 3, 10s", drifty.ResyncInterval(), drifty.MaxInflight(), drifty.TaskDeadline())
	}
	if stack.ResyncInterval() != 0 || !stack.Composes() || len(stack.TriggersOf("compose")) != 1 {
		t.Errorf("stack: resync %s, composes %v, compose runs %v; a composer resyncs only with resync_recomposes",
			stack.ResyncInterval(), stack.Composes(), stack.TriggersOf("compose"))
	}
	if !e.reg.AnyResync() {
		t.Error("AnyResync is false with drifty resyncing")
	}
}

// TestSubscribersAreWokenOnChange: a subscriber is woken by a refresh
// that changed the view, not by one that found nothing new, and no more
// once it unsubscribed.
func TestSubscribersAreWokenOnChange(t *testing.T) {
	e := newEnv(t)
	e.refresh()
	woken, stop := e.reg.Subscribe()
	e.refresh()
	select {
	case <-woken:
		t.Fatal("woken by a refresh that changed nothing")
	default:
	}
	testkit.ApplyKind(t, e.st, leaf(t, "greeting", nil))
	e.refresh()
	select {
	case <-woken:
	default:
		t.Fatal("not woken by a refresh that loaded a kind")
	}
	stop()
	testkit.ApplyKind(t, e.st, leaf(t, "other", nil))
	e.refresh()
	select {
	case <-woken:
		t.Fatal("woken after unsubscribing")
	default:
	}
}

// TestRunReloads: a running registry picks up a change by its poll alone,
// and at once on a kinds wake-up.
func TestRunReloads(t *testing.T) {
	e := newEnv(t)
	e.refresh()
	woken, stop := e.reg.Subscribe()
	defer stop()
	g := service.Start(context.Background(), quiet, e.reg)
	t.Cleanup(g.Stop)
	reloaded := func(what string) {
		t.Helper()
		testkit.Receive(t, woken, "the running registry to reload "+what)
	}

	testkit.ApplyKind(t, e.st, leaf(t, "polled", nil))
	reloaded("by its poll")
	if e.reg.Get("polled", 1) == nil {
		t.Fatal("reloaded, but the kind is not in the view")
	}
	// The poll just ran, so the next is about RefreshInterval away: a
	// reload well before it is the wake-up's.
	testkit.ApplyKind(t, e.st, leaf(t, "woken", nil))
	began := time.Now()
	e.bus.Publish(notify.Kinds)
	reloaded("on a wake-up")
	if took := time.Since(began); took >= kinds.RefreshInterval/2 || e.reg.Get("woken", 1) == nil {
		t.Fatalf("reloaded %s after the wake-up (the poll is every %s); want at once", took, kinds.RefreshInterval)
	}
}

// TestBrokenStoredManifestIsIgnored: a stored manifest that no longer
// decodes is left out of the view; the other kinds still load.
func TestBrokenStoredManifestIsIgnored(t *testing.T) {
	e := newEnv(t)
	testkit.ApplyKind(t, e.st, leaf(t, "good", nil))
	if _, _, err := e.st.ApplyKind(e.ctx, store.Kind{Kind: "broken", Version: 1, Manifest: []byte(`{"no_such_field": true}`)}, nil); err != nil {
		t.Fatal(err)
	}
	e.refresh()
	if e.reg.Get("broken", 1) != nil || e.reg.Get("good", 1) == nil {
		t.Fatalf("broken = %v, good = %v; want only good", e.reg.Get("broken", 1), e.reg.Get("good", 1))
	}
}

// TestProviderConfigs: the default config and a named one are in the
// view after a refresh; a task on a resource naming one gets the default
// with the named keys on top.
func TestProviderConfigs(t *testing.T) {
	e := newEnv(t)
	row := testkit.ApplyKind(t, e.st, &convergev1.KindManifest{Kind: "cloud", KindVersion: 1, SpecSchema: testkit.Object(t),
		ConfigSchema: testkit.Object(t),
		Reactions:    []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}})
	v := store.ConfigValidator{KindRevision: row.Revision, Validate: func([]byte) error { return nil }}
	for name, config := range map[string]string{"default": `{"region":"eu","tier":"small"}`, "big": `{"tier":"large"}`} {
		if _, _, err := e.st.ApplyProviderConfig(e.ctx, store.ProviderConfig{Kind: "cloud", Version: 1, Name: name, Config: []byte(config)}, v); err != nil {
			t.Fatal(err)
		}
	}
	e.refresh()
	if def, rev := e.reg.DefaultConfig("cloud", 1); !sameJSON(t, def, `{"region":"eu","tier":"small"}`) || rev == 0 {
		t.Fatalf("default config = %s at revision %d", def, rev)
	}
	if !e.reg.HasConfig("cloud", 1, "big") || e.reg.HasConfig("cloud", 1, "huge") {
		t.Fatal("HasConfig does not tell big from huge")
	}
	if got := e.reg.EffectiveConfig("cloud", 1, "big"); !sameJSON(t, got, `{"region":"eu","tier":"large"}`) {
		t.Fatalf("effective config of big = %s", got)
	}
	if got := e.reg.EffectiveConfig("cloud", 1, ""); !sameJSON(t, got, `{"region":"eu","tier":"small"}`) {
		t.Fatalf("effective config with none named = %s", got)
	}
}

func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}
