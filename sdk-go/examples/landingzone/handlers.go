package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// The kinds this worker serves, all at version 1.
const (
	kindZone    = "landingzone"
	kindAccount = "account"
	kindVPC     = "vpc"
	kindRoute   = "route"
	kindVersion = 1
)

// handlers holds what the flags set: the simulated work per leaf task and
// the faults to inject.
type handlers struct {
	delay  time.Duration
	faults faults
}

// reaction is one reaction this worker serves, at version kindVersion.
type reaction struct {
	kind, name string
	handler    converge.HandlerFunc
}

// reactions lists what the worker serves: the composer and the three
// leaves. kinds.yaml declares the same reactions.
func (h *handlers) reactions() []reaction {
	return []reaction{
		{kindZone, "compose", h.compose},
		{kindAccount, "reconcile", h.leaf(reconcileAccount)},
		{kindVPC, "reconcile", h.leaf(reconcileVPC)},
		{kindRoute, "reconcile", h.leaf(reconcileRoute)},
	}
}

// register serves every reaction on w.
func (h *handlers) register(w *converge.Worker) {
	for _, r := range h.reactions() {
		w.Handle(r.kind, kindVersion, r.name, r.handler)
	}
}

// compose is the landingzone composer.
func (h *handlers) compose(_ context.Context, t *converge.Task) (*converge.Result, error) {
	if err := h.faults.check(t); err != nil {
		return nil, err
	}
	var spec zoneSpec
	if err := t.DecodeSpec(&spec); err != nil {
		// The server validated the spec against the kind's schema, so this
		// is a broken contract, not something a retry fixes.
		return nil, converge.Terminal(err)
	}
	return compose(spec)
}

// leaf wraps a leaf's reconcile: simulated work, injected faults, then the
// status it reports.
func (h *handlers) leaf(reconcile func(*converge.Task) (any, error)) converge.HandlerFunc {
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		if err := sleep(ctx, h.delay); err != nil {
			return nil, err
		}
		if err := h.faults.check(t); err != nil {
			return nil, err
		}
		status, err := reconcile(t)
		if err != nil {
			return nil, err
		}
		return &converge.Result{Status: status}, nil
	}
}

// sleep waits d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cloudID is a stand-in for an id a cloud would assign: prefix, '-' and the
// first 12 hex digits of the SHA-256 of the resource's name. Deterministic,
// so re-running a task reports the same id (as an idempotent create would).
func cloudID(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	return prefix + "-" + hex.EncodeToString(sum[:6])
}
