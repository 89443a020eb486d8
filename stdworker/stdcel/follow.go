package stdcel

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

// follow keeps the served kinds in step with the std.graph resources on
// the server, for as long as std.graph is served: at start (graphs applied
// before this stdworker started), and on every change (a graph compiled
// or deleted through another stdworker). The compile and teardown
// reactions act at once on the stdworker that runs them; this catches up
// the others.
func (p *Provider) follow(env provider.Env) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-env.Done
		cancel()
	}()
	delay := time.Second
	for {
		err := env.Control.Follow(ctx, &convergev1.WatchRequest{Kind: Kind}, func(r *convergev1.WatchResponse) error {
			delay = time.Second
			p.sync(ctx, env)
			return nil
		})
		if err != nil {
			env.Log.Debug("following std.graph resources", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay/2 + rand.N(delay/2)):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

// sync serves the kind of every Ready graph not served yet (or served at
// an older generation), and stops serving kinds of graphs that are gone
// or being deleted.
func (p *Provider) sync(ctx context.Context, env provider.Env) {
	live := map[string]bool{}
	token := ""
	for {
		res, err := env.Control.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: Kind, KindVersion: Version, PageSize: 1000, PageToken: token})
		if err != nil {
			env.Log.Warn("listing std.graph resources", "err", err)
			return
		}
		for _, r := range res.GetResources() {
			owner := graphOwner(r.GetNamespace(), r.GetName())
			if r.GetPhase() == client.PhaseDeleting {
				continue
			}
			live[owner] = true
			if r.GetPhase() != client.PhaseReady || p.current(owner, r.GetGeneration()) {
				continue
			}
			if err := p.adopt(ctx, env, owner, r); err != nil {
				env.Log.Warn("serving the kind of a graph", "graph", owner, "err", err)
			}
		}
		token = res.GetNextPageToken()
		if token == "" {
			break
		}
	}
	p.mu.Lock()
	var gone []string
	for owner := range p.byGraph {
		if !live[owner] {
			gone = append(gone, owner)
		}
	}
	p.mu.Unlock()
	for _, owner := range gone {
		p.unserve(owner)
	}
}

// current reports whether owner's kind is served at generation.
func (p *Provider) current(owner string, generation int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	key, ok := p.byGraph[owner]
	return ok && p.kinds[key] != nil && p.kinds[key].generation >= generation
}

// adopt serves the kind of a graph the server already compiled, with the
// kind's manifest as the server holds it.
func (p *Provider) adopt(ctx context.Context, env provider.Env, owner string, r *convergev1.Resource) error {
	g, err := compileResource(ctx, env, r)
	if err != nil {
		return err
	}
	res, err := env.Control.GetKind(ctx, &convergev1.GetKindRequest{Kind: g.Kind, KindVersion: int32(g.Version)})
	if err != nil {
		return err
	}
	if res.GetManifest().GetOwner() != owner {
		return nil
	}
	return p.serve(env, owner, r.GetGeneration(), g, res.GetManifest())
}
