package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// The kinds this worker serves; the e2e tests' manifests declare them.
const (
	kindWidget = "widget" // a leaf at versions 1 and 2, with a finalizer: the stability tests
	kindBucket = "bucket" // a leaf that needs its default provider config
	kindProbe  = "probe"  // a leaf: drift and status-schema tests
	kindRack   = "rack"   // a composite whose spec lists its children
	kindDB     = "db"     // a leaf with the resize operation
	kindPager  = "pager"  // a reactor kind
)

// handlers holds what the flags set.
type handlers struct {
	driftDir   string
	objectsDir string
	records    *recorder
}

// register serves every reaction of every kind on w.
func (h *handlers) register(w *converge.Worker) {
	for _, v := range []int{1, 2} {
		w.Handle(kindWidget, v, "reconcile", h.echo)
		w.Handle(kindWidget, v, "teardown", h.teardown)
	}
	w.Handle(kindBucket, 1, "reconcile", h.echo, converge.NeedsConfig())
	w.Handle(kindProbe, 1, "reconcile", h.echo)
	w.Handle(kindRack, 1, "compose", h.compose)
	w.Handle(kindDB, 1, "reconcile", h.echo)
	w.Handle(kindDB, 1, "resize", h.resize)
	w.Handle(kindPager, 1, "page", h.page)
	h.registerVPC(w)
}

// leafSpec is what the leaf kinds' specs may ask of the worker; other
// fields are the kind's own and are ignored.
type leafSpec struct {
	// Fail fails every reconcile terminally with this message.
	Fail string `json:"fail"`
	// Report is copied into the status as it is.
	Report map[string]any `json:"report"`
}

// echo is the leaves' specChange reaction (also run on resync): it reports
// spec.report as the status, adds under "seen" what the task said, and
// reports the resource unhealthy while its drift file exists.
func (h *handlers) echo(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	var spec leafSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	if spec.Fail != "" {
		return nil, converge.Terminal(errors.New(spec.Fail))
	}
	seen := map[string]any{"kind_version": t.KindVersion, "generation": t.Generation, "trigger": t.Trigger}
	if len(t.Config) > 0 {
		seen["config"] = t.Config
	}
	status := map[string]any{}
	for k, v := range spec.Report {
		status[k] = v
	}
	status["seen"] = seen
	return &converge.Result{Status: status, Unhealthy: h.drifted(t)}, nil
}

// drifted reports whether the test has marked the task's resource as
// drifted.
func (h *handlers) drifted(t *converge.Task) bool {
	if h.driftDir == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(h.driftDir, t.Kind+"."+t.Name))
	return err == nil
}

// teardown is the widget's deleteRequested reaction; the record is what
// the tests look for.
func (h *handlers) teardown(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	return &converge.Result{}, nil
}

// rackSpec lists a rack's children.
type rackSpec struct {
	Children []struct {
		Kind string         `json:"kind"`
		Name string         `json:"name"`
		Spec map[string]any `json:"spec"`
	} `json:"children"`
}

// compose is the rack's composer: it emits the children its spec lists,
// all at version 1.
func (h *handlers) compose(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	var spec rackSpec
	if err := t.DecodeSpec(&spec); err != nil {
		return nil, converge.Terminal(err)
	}
	res := &converge.Result{Compose: true, Status: map[string]any{"children": len(spec.Children)}}
	for _, c := range spec.Children {
		res.Children = append(res.Children, converge.Child{Kind: c.Kind, KindVersion: 1, Name: c.Name, Spec: c.Spec})
	}
	return res, nil
}

// resizeInput is the db's resize verb's input.
type resizeInput struct {
	Size int `json:"size"`
	// Fail fails the operation terminally with this message.
	Fail string `json:"fail"`
}

// resize runs the db's resize verb: its output names the new size.
func (h *handlers) resize(_ context.Context, t *converge.Task) (*converge.Result, error) {
	h.records.add(taskRecord(t))
	if t.Operation == nil {
		return nil, converge.Terminal(fmt.Errorf("task %s of %s/%s carries no operation", t.Trigger, t.Kind, t.Name))
	}
	var in resizeInput
	if err := t.Operation.DecodeInput(&in); err != nil {
		return nil, converge.Terminal(err)
	}
	if in.Fail != "" {
		return nil, converge.Terminal(errors.New(in.Fail))
	}
	return &converge.Result{Output: map[string]any{"resized_to": in.Size, "resource": t.Name}}, nil
}

// page is the pager's reactor reaction: its side effect is the record.
func (h *handlers) page(_ context.Context, t *converge.Task) (*converge.Result, error) {
	if t.Reactor == nil {
		return nil, converge.Terminal(fmt.Errorf("task %s of %s carries no reactor event", t.Trigger, t.Kind))
	}
	h.records.add(taskRecord(t))
	return nil, nil
}

// onConfig records every default provider config the server pushes.
func (h *handlers) onConfig(kind string, version int, config json.RawMessage) {
	h.records.add(record{Event: "config", Kind: kind, KindVersion: version, Config: config, At: time.Now()})
}
