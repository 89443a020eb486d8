package graph

import (
	"context"
	"time"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/store"
)

// evalFlows evaluates a dependency's flows into the dependent in. A
// flow sees the stored documents, sealed values sealed: a pointer copies
// an envelope as it is, and an expression that writes a property that is
// not secret can never compute with a secret's clear value. Only an
// expression writing a secret property of the dependent sees the
// dependency's documents opened; sealFlowed seals its result.
func evalFlows(c *flow.Cache, reg *kinds.Registry, in store.GateInput, specs []flow.Spec, status, spec any) ([]flow.Write, *flow.Spec, error) {
	e := reg.Get(in.Kind, in.Version)
	if e == nil || len(e.Compiled.Spec.Secrets()) == 0 {
		return flow.EvalAll(c, specs, status, spec)
	}
	var openStatus, openSpec any
	opened := false
	writes := make([]flow.Write, 0, len(specs))
	for i := range specs {
		f := specs[i]
		st, sp := status, spec
		if f.Expr != "" {
			if p, err := c.Compile(f.From, f.Expr, f.To); err == nil && e.Compiled.Spec.IsSecret(p.Target()) {
				if !opened {
					var err error
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					openStatus, err = reg.Secrets().Open(ctx, status)
					if err == nil {
						openSpec, err = reg.Secrets().Open(ctx, spec)
					}
					cancel()
					if err != nil {
						return nil, &specs[i], err
					}
					opened = true
				}
				st, sp = openStatus, openSpec
			}
		}
		ws, failed, err := flow.EvalAll(c, specs[i:i+1], st, sp)
		if err != nil {
			return nil, failed, err
		}
		writes = append(writes, ws...)
	}
	return writes, nil, nil
}

// sealFlowed returns the effective spec of a dependent twice: opened, to
// be validated against its schema, and sealed at its secret properties,
// to be stored. Sealing is deterministic, so an unchanged secret keeps its
// envelope and bumps no generation.
func sealFlowed(reg *kinds.Registry, e *kinds.Entry, effective any) (clear, sealed any, err error) {
	sealed = effective
	if paths := e.Compiled.Spec.Secrets(); len(paths) > 0 {
		if sealed, err = reg.Secrets().Seal(effective, paths); err != nil {
			return nil, nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	clear, err = reg.Secrets().Open(ctx, sealed)
	return clear, sealed, err
}
