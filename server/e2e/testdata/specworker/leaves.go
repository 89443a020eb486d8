package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// leafSpec is the spec of the leaf kinds (part and fin).
type leafSpec struct {
	// ID is reported as status.id; empty reports the resource's name.
	ID string `json:"id"`
	// OmitID reports no status.id at all.
	OmitID bool `json:"omit_id"`
	// Upstream is where flows write; it is echoed as status.upstream.
	Upstream string `json:"upstream"`
	// Unhealthy reports the resource unhealthy.
	Unhealthy bool `json:"unhealthy"`
	// Fail, when set, fails every reconcile terminally with this message.
	Fail string `json:"fail"`
}

// reconcileLeaf reports the status the spec asks for.
func reconcileLeaf(_ context.Context, t *converge.Task) (*converge.Result, error) {
	var spec leafSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	if spec.Fail != "" {
		return nil, converge.Terminal(errors.New(spec.Fail))
	}
	status := map[string]any{}
	if !spec.OmitID {
		status["id"] = spec.ID
		if spec.ID == "" {
			status["id"] = t.Name
		}
	}
	if spec.Upstream != "" {
		status["upstream"] = spec.Upstream
	}
	return &converge.Result{Status: status, Unhealthy: spec.Unhealthy}, nil
}

// teardown is the fin kind's deleteRequested reaction: it records when it
// ran and, for resources -fail-teardown matches, fails.
func (h *handlers) teardown(_ context.Context, t *converge.Task) (*converge.Result, error) {
	rec := record{Event: "teardown", Kind: t.Kind, Name: t.Name, Generation: t.Generation, Start: time.Now()}
	if f := h.failTeardown; f != nil && strings.Contains(t.Name, f.substring) {
		rec.Error, rec.End = f.message, time.Now()
		h.records.add(rec)
		return nil, errors.New(f.message)
	}
	rec.End = time.Now()
	h.records.add(rec)
	return &converge.Result{}, nil
}
