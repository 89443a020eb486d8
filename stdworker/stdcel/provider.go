package stdcel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

// The provider's name, and the std kind version it serves.
const (
	Name    = "stdcel"
	Kind    = "std.graph"
	Version = 1
)

// Reactions of std.graph and of the kinds graphs define.
const (
	reactionCompile  = "compile"
	reactionTeardown = "teardown"
	reactionCompose  = "compose"
	reactionRollup   = "rollup"
)

// Provider serves std.graph: it checks each graph, applies the kind the
// graph defines and serves that kind (Env.Serve) with a composer that
// evaluates the graph for every instance.
type Provider struct {
	mu sync.Mutex
	// kinds are the served instance kinds by "kind@version".
	kinds map[string]*served
	// byGraph maps a graph ("namespace/name") to the kind it serves.
	byGraph map[string]string
	// following is set once a watch of std.graph resources runs.
	following atomic.Bool
}

// served is one instance kind being served; its graph is swapped in place
// when the graph changes.
type served struct {
	graph      atomic.Pointer[Graph]
	owner      string
	generation int64
	stop       func()
}

// New returns the stdcel provider.
func New() provider.Provider {
	return &Provider{kinds: map[string]*served{}, byGraph: map[string]string{}}
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return Name }

// Register implements provider.Provider. For std.graph v1 it registers the
// graph's compile and teardown reactions and starts following std.graph
// resources, so the kinds that graphs applied earlier (or through another
// stdworker) are served too. A kind a graph defines may also be named in
// the stdworker configuration with settings {graph, namespace}.
func (p *Provider) Register(ctx context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	m := s.Manifest
	if m.GetKind() == Kind && m.GetKindVersion() == Version {
		if err := needReactions(m, reactionCompile, reactionTeardown); err != nil {
			return err
		}
		w.Handle(Kind, Version, reactionCompile, p.compile(env))
		w.Handle(Kind, Version, reactionTeardown, p.teardown(env))
		if env.Control != nil && p.following.CompareAndSwap(false, true) {
			go p.follow(env)
		}
		return nil
	}
	return p.registerConfigured(ctx, w, s, env)
}

// registerConfigured serves a graph's kind named in the configuration file.
func (p *Provider) registerConfigured(ctx context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	var set struct {
		Graph     string `json:"graph"`
		Namespace string `json:"namespace"`
	}
	if len(s.Settings) > 0 {
		if err := json.Unmarshal(s.Settings, &set); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	}
	if set.Graph == "" {
		return fmt.Errorf("stdcel serves %s v%d, and the kinds graphs define once they are applied; to name %s v%d in the configuration, give settings {graph: <std.graph resource name>, namespace: <its namespace>}",
			Kind, Version, s.Manifest.GetKind(), s.Manifest.GetKindVersion())
	}
	if env.Control == nil {
		return errors.New("stdcel needs the control API to read its graph")
	}
	res, err := env.Control.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: set.Namespace, Kind: Kind, Name: set.Graph})
	if err != nil {
		return fmt.Errorf("settings.graph %q: %w", set.Graph, err)
	}
	g, err := compileResource(ctx, env, res.GetResource())
	if err != nil {
		return fmt.Errorf("settings.graph %q: %w", set.Graph, err)
	}
	if g.Kind != s.Manifest.GetKind() || g.Version != int(s.Manifest.GetKindVersion()) {
		return fmt.Errorf("settings.graph %q defines %s v%d, not %s v%d", set.Graph, g.Kind, g.Version, s.Manifest.GetKind(), s.Manifest.GetKindVersion())
	}
	sv := &served{}
	sv.graph.Store(g)
	return (&instance{sv: sv}).Register(ctx, w, s, env)
}

func needReactions(m *convergev1.KindManifest, names ...string) error {
	for _, n := range names {
		found := false
		for _, r := range m.GetReactions() {
			if r.GetName() == n {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s v%d has no reaction %q; stdcel serves %v", m.GetKind(), m.GetKindVersion(), n, names)
		}
	}
	return nil
}

// compile is std.graph's specChange reaction.
func (p *Provider) compile(env provider.Env) converge.HandlerFunc {
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		def, err := DecodeDefinition(t.Spec)
		if err != nil {
			return nil, converge.Terminal(err)
		}
		g, err := Compile(ctx, def, lookupKind(env.Control))
		if err != nil {
			var ce *CheckError
			if errors.As(err, &ce) {
				return nil, converge.Terminal(err)
			}
			return nil, err
		}
		owner := graphOwner(t.Namespace, t.Name)
		m, err := applyKind(ctx, env.Control, g, owner)
		if err != nil {
			return nil, err
		}
		if err := p.serve(env, owner, t.Generation, g, m); err != nil {
			return nil, err
		}
		if t.Generation > 1 && def.Recompose != RecomposeRollout {
			// The graph changed: instances composed from the old one
			// compose again (with recompose: rollout, a staged rollout
			// takes them in waves instead).
			if err := reconcileInstances(ctx, env.Control, g, fmt.Sprintf("%s changed (generation %d)", owner, t.Generation)); err != nil {
				return nil, err
			}
		}
		return &converge.Result{
			Status: map[string]any{
				"serving":       map[string]any{"kind": g.Kind, "version": g.Version},
				"resources":     len(g.nodes),
				"kind_revision": m.GetRevision(),
			},
			Conditions: []converge.Condition{{Type: "Serving", Status: converge.ConditionTrue, Reason: "Compiled",
				Message: fmt.Sprintf("the graph checks out; serving %s v%d", g.Kind, g.Version)}},
		}, nil
	}
}

// teardown is std.graph's deleteRequested reaction: stop serving the kind
// the graph defines, and leave the kind (its instances may still exist).
func (p *Provider) teardown(env provider.Env) converge.HandlerFunc {
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		p.unserve(graphOwner(t.Namespace, t.Name))
		return nil, nil
	}
}

// serve starts serving g's kind for the graph owner, or swaps in g if the
// kind is already served.
func (p *Provider) serve(env provider.Env, owner string, generation int64, g *Graph, m *convergev1.KindManifest) error {
	key := g.Kind + "@" + strconv.Itoa(g.Version)
	p.mu.Lock()
	defer p.mu.Unlock()
	if old, ok := p.byGraph[owner]; ok && old != key {
		p.stopLocked(old)
	}
	if sv, ok := p.kinds[key]; ok {
		sv.graph.Store(g)
		sv.owner, sv.generation = owner, generation
		p.byGraph[owner] = key
		return nil
	}
	if env.Serve == nil {
		return converge.Terminal(errors.New("this stdworker cannot serve kinds at run time (provider.Env.Serve is nil)"))
	}
	sv := &served{owner: owner, generation: generation}
	sv.graph.Store(g)
	stop, err := env.Serve(context.Background(), &instance{sv: sv}, provider.Served{Manifest: m})
	if err != nil {
		return fmt.Errorf("serving %s v%d: %w", g.Kind, g.Version, err)
	}
	sv.stop = stop
	p.kinds[key] = sv
	p.byGraph[owner] = key
	return nil
}

func (p *Provider) unserve(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if key, ok := p.byGraph[owner]; ok {
		p.stopLocked(key)
		delete(p.byGraph, owner)
	}
}

func (p *Provider) stopLocked(key string) {
	sv, ok := p.kinds[key]
	if !ok {
		return
	}
	delete(p.kinds, key)
	if sv.stop != nil {
		// The drain waits for running tasks; do not hold the lock for it.
		go sv.stop()
	}
}

func graphOwner(namespace, name string) string {
	if namespace == "" {
		namespace = client.DefaultNamespace
	}
	return "std.graph/" + namespace + "/" + name
}

// lookupKind reads kind schemas with the control API.
func lookupKind(c *client.Client) LookupKind {
	return func(ctx context.Context, kind string, version int) (*KindSchemas, error) {
		if c == nil {
			return nil, errors.New("no control API client")
		}
		res, err := c.GetKind(ctx, &convergev1.GetKindRequest{Kind: kind, KindVersion: int32(version)})
		if connect.CodeOf(err) == connect.CodeNotFound {
			return nil, ErrUnknownKind
		}
		if err != nil {
			return nil, err
		}
		m := res.GetManifest()
		ks := &KindSchemas{}
		if m.GetSpecSchema() != nil {
			ks.Spec = m.GetSpecSchema().AsMap()
		}
		if m.GetStatusSchema() != nil {
			ks.Status = m.GetStatusSchema().AsMap()
		}
		return ks, nil
	}
}

// Manifest is the manifest of the kind g defines: its schemas, a composer
// (compose) and a rollup (rollup) that stdcel serves.
func (g *Graph) Manifest(owner string) (*convergev1.KindManifest, error) {
	spec, err := structpb.NewStruct(plainJSON(g.specSchema).(map[string]any))
	if err != nil {
		return nil, fmt.Errorf("spec_schema: %w", err)
	}
	status, err := structpb.NewStruct(plainJSON(g.statusSchema).(map[string]any))
	if err != nil {
		return nil, fmt.Errorf("status_schema: %w", err)
	}
	desc := g.description
	if desc == "" {
		desc = "Defined by the CEL resource graph " + owner + "."
	}
	return &convergev1.KindManifest{
		Kind: g.Kind, KindVersion: int32(g.Version), Description: desc, Owner: owner,
		SpecSchema: spec, StatusSchema: status,
		Reactions: []*convergev1.Reaction{
			{Name: reactionCompose, Trigger: "specChange", Emits: []string{"children", "edges", "status"},
				Description: "Evaluates the graph: children, edges, value flows and the status fields the spec decides."},
			{Name: reactionRollup, Trigger: "childrenSettled", Emits: []string{"status", "conditions"},
				Description: "Checks readyWhen and projects the status."},
		},
	}, nil
}

// applyKind applies g's kind unless another owner has it.
func applyKind(ctx context.Context, c *client.Client, g *Graph, owner string) (*convergev1.KindManifest, error) {
	if c == nil {
		return nil, errors.New("no control API client")
	}
	m, err := g.Manifest(owner)
	if err != nil {
		return nil, converge.Terminal(err)
	}
	cur, err := c.GetKind(ctx, &convergev1.GetKindRequest{Kind: g.Kind, KindVersion: int32(g.Version)})
	switch {
	case err == nil && cur.GetManifest().GetOwner() != owner:
		return nil, converge.Terminal(fmt.Errorf("kind: %s v%d already exists and is not defined by this graph (its owner is %q)",
			g.Kind, g.Version, cur.GetManifest().GetOwner()))
	case err != nil && connect.CodeOf(err) != connect.CodeNotFound:
		return nil, err
	case err == nil && m.GetPolicy() == nil:
		// A graph declares no policy, so the kind's is whatever its
		// owners set live (conctl kind policy): a graph change keeps it.
		m.Policy = cur.GetManifest().GetPolicy()
	}
	res, err := c.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m})
	if err != nil {
		switch connect.CodeOf(err) {
		case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeAlreadyExists, connect.CodeAborted:
			var ce *connect.Error
			if errors.As(err, &ce) {
				return nil, converge.Terminal(fmt.Errorf("applying kind %s v%d: %s", g.Kind, g.Version, ce.Message()))
			}
			return nil, converge.Terminal(fmt.Errorf("applying kind %s v%d: %w", g.Kind, g.Version, err))
		}
		return nil, fmt.Errorf("applying kind %s v%d: %w", g.Kind, g.Version, err)
	}
	return res.GetManifest(), nil
}

// reconcileInstances forces a reconcile of every instance of g's kind.
func reconcileInstances(ctx context.Context, c *client.Client, g *Graph, reason string) error {
	token := ""
	for {
		res, err := c.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: g.Kind, KindVersion: int32(g.Version),
			PageSize: 1000, PageToken: token, Summary: true})
		if err != nil {
			return fmt.Errorf("listing the instances of %s v%d: %w", g.Kind, g.Version, err)
		}
		for _, r := range res.GetResources() {
			if r.GetPhase() == client.PhaseDeleting {
				continue
			}
			_, err := c.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{
				Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName(), Reason: reason})
			if err != nil && connect.CodeOf(err) != connect.CodeNotFound {
				return fmt.Errorf("reconciling %s/%s/%s: %w", r.GetNamespace(), r.GetKind(), r.GetName(), err)
			}
		}
		if token = res.GetNextPageToken(); token == "" {
			return nil
		}
	}
}

// compileResource compiles a std.graph resource as the server holds it.
func compileResource(ctx context.Context, env provider.Env, r *convergev1.Resource) (*Graph, error) {
	raw, err := r.GetSpec().MarshalJSON()
	if err != nil {
		return nil, err
	}
	def, err := DecodeDefinition(raw)
	if err != nil {
		return nil, err
	}
	return Compile(ctx, def, lookupKind(env.Control))
}

// plainJSON converts json.Number to float64, which structpb takes.
func plainJSON(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainJSON(e)
		}
		return out
	}
	return v
}
