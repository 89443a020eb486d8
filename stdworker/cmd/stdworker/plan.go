package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/internal/config"
	"github.com/convergehq/converge/stdworker/provider"
	"github.com/convergehq/converge/stdworker/stdterraform"
)

// job is one kind version to serve.
type job struct {
	provider    provider.Provider
	served      provider.Served
	parallelism int
	// optional: a std kind served by default, not asked for by name; if
	// its provider cannot start it is skipped rather than fatal.
	optional bool
}

// plan decides what to serve: the configuration file's kinds, or without
// one the std kinds the server has and this binary can serve; only those in
// only, when it is not nil. It reads each manifest from the server.
func plan(ctx context.Context, c *client.Client, file *config.File, only map[string]bool,
	provs map[string]provider.Provider, log *slog.Logger) ([]job, error) {
	var jobs []job
	offered := map[string]bool{}
	if file != nil {
		for i, k := range file.Kinds {
			offered[k.Ref()] = true
			if only != nil && !only[k.Ref()] {
				continue
			}
			m, err := getKind(ctx, c, k.Kind, k.Version, log)
			if connect.CodeOf(err) == connect.CodeNotFound {
				return nil, fmt.Errorf("config kinds[%d]: kind %s is not on the server: apply its manifest first (conctl apply -f ...)", i, k.Ref())
			}
			if err != nil {
				return nil, fmt.Errorf("config kinds[%d]: reading kind %s: %w", i, k.Ref(), err)
			}
			jobs = append(jobs, job{provider: provs[k.Provider], served: provider.Served{Manifest: m, Settings: k.Settings}, parallelism: k.Parallelism})
		}
	} else {
		for _, sk := range stdKinds {
			ref := config.Ref(sk.kind, sk.version)
			offered[ref] = true
			if only != nil && !only[ref] {
				continue
			}
			p, ok := provs[sk.provider]
			if !ok {
				log.Debug("std kind skipped: this stdworker has no provider for it", "kind", ref, "provider", sk.provider)
				continue
			}
			m, err := getKind(ctx, c, sk.kind, sk.version, log)
			if connect.CodeOf(err) == connect.CodeNotFound {
				log.Info("std kind skipped: not on the server (stdworker kinds apply)", "kind", ref)
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading kind %s: %w", ref, err)
			}
			jobs = append(jobs, job{provider: p, served: provider.Served{Manifest: m}, optional: only == nil})
		}
		generated, err := generatedKinds(ctx, c, provs, offered, only, log)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, generated...)
	}
	var unknown []string
	for ref := range only {
		if !offered[ref] {
			unknown = append(unknown, ref)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		where := "std kinds"
		if file != nil {
			where = "kinds of " + file.Path
		}
		return nil, fmt.Errorf("--kinds: %s not among the %s", strings.Join(unknown, ", "), where)
	}
	if len(jobs) == 0 {
		if file != nil {
			return nil, errors.New("nothing to serve: --kinds leaves none of the configuration file's kinds")
		}
		return nil, errors.New("nothing to serve: the server has no std kind this stdworker serves; run `stdworker kinds apply` first, or give --config")
	}
	return jobs, nil
}

// generatedKinds are the jobs for the kinds on the server generated from a
// Terraform provider (stdworker kinds generate): their manifests say what
// stdterraform runs, so they need no configuration file either. Their
// binary and credentials come from their provider configs.
func generatedKinds(ctx context.Context, c *client.Client, provs map[string]provider.Provider,
	offered, only map[string]bool, log *slog.Logger) ([]job, error) {
	p, ok := provs[stdterraform.Name]
	if !ok {
		return nil, nil
	}
	resp, err := c.ListKinds(ctx, &convergev1.ListKindsRequest{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The std kinds are served all the same: a stdworker that may
		// read kinds one by one but not list them (or an older server)
		// keeps working as it did before generated kinds existed.
		log.Warn("generated kinds skipped: listing the server's kinds failed", "err", err)
		return nil, nil
	}
	var jobs []job
	for _, m := range resp.GetManifests() {
		b, err := stdterraform.BindingOf(m)
		ref := config.Ref(m.GetKind(), int(m.GetKindVersion()))
		switch {
		case err != nil:
			log.Warn("generated kind skipped", "kind", ref, "err", err)
			continue
		case b == nil:
			continue
		}
		offered[ref] = true
		if only != nil && !only[ref] {
			continue
		}
		jobs = append(jobs, job{provider: p, served: provider.Served{Manifest: m}, optional: only == nil})
	}
	return jobs, nil
}

// getKind reads a manifest, waiting out a server that is not reachable yet.
func getKind(ctx context.Context, c *client.Client, kind string, version int, log *slog.Logger) (*convergev1.KindManifest, error) {
	delay := 100 * time.Millisecond
	for {
		resp, err := c.GetKind(ctx, &convergev1.GetKindRequest{Kind: kind, KindVersion: int32(version)})
		if err == nil {
			return resp.GetManifest(), nil
		}
		if code := connect.CodeOf(err); code != connect.CodeUnavailable || ctx.Err() != nil {
			return nil, err
		}
		log.Warn("server unreachable; retrying", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}
