package main

import (
	"context"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// The kinds this worker serves, all at version 1; specKinds in the e2e
// tests declares them.
const (
	kindStack   = "stack"   // a composite
	kindGraced  = "graced"  // a composite whose kind keeps dropped children for a grace period
	kindSummary = "summary" // a composite with a childrenSettled reaction
	kindPart    = "part"    // a leaf
	kindFin     = "fin"     // a leaf with a finalizer: deleting it runs its teardown
	kindVersion = 1
)

// handlers holds what the flags set.
type handlers struct {
	composeDelay time.Duration
	failTeardown *teardownFault
	records      *recorder // nil records nothing
}

// teardownFault makes the teardowns of matching resources fail.
type teardownFault struct {
	substring, message string
}

// register serves every reaction of every kind on w.
func (h *handlers) register(w *converge.Worker) {
	for _, kind := range []string{kindStack, kindGraced, kindSummary} {
		w.Handle(kind, kindVersion, "compose", h.compose)
	}
	w.Handle(kindSummary, kindVersion, "summarize", h.summarize)
	w.Handle(kindPart, kindVersion, "reconcile", reconcileLeaf)
	w.Handle(kindFin, kindVersion, "reconcile", reconcileLeaf)
	w.Handle(kindFin, kindVersion, "teardown", h.teardown)
}

// sleep waits d, or less if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
