package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	std "github.com/convergehq/converge/catalog/std"
	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/internal/catalog"
	"github.com/convergehq/converge/stdworker/provider"
	"github.com/convergehq/converge/stdworker/stdterraform"
)

// staticModule is the hand-written module doing what the generated kind
// tf.time.static does for one resource: time_static with triggers.
const staticModule = `terraform {
  required_providers {
    time = { source = "hashicorp/time", version = "0.14.2" }
  }
}
variable "triggers" { type = map(string) }
resource "time_static" "this" {
  triggers = var.triggers
}
output "rfc3339" { value = time_static.this.rfc3339 }
`

// terraformFigures times n reconciles of one time_static through the
// generated kind tf.time.static (catalog/tf-time) and through std.terraform
// with the same resource in a hand-written module, calling stdterraform's
// handlers in this process: each spec change replaces the object (a new
// trigger), and each unchanged reconcile (a resync) finds nothing to do.
func terraformFigures(ctx context.Context, catalogDir, binary, cliConfig string, n int) error {
	work, err := os.MkdirTemp("", "stdworker-bench-tf-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	module := filepath.Join(work, "module")
	if err := os.MkdirAll(module, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(staticModule), 0o644); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(catalogDir, "tf-time", "tf.time.static", "v1.yaml"))
	if err != nil {
		return fmt.Errorf("-catalog: %w", err)
	}
	gen, err := catalog.Parse(raw)
	if err != nil || len(gen) != 1 {
		return fmt.Errorf("tf.time.static v1: %v", err)
	}
	stds, err := catalog.Read(std.FS)
	if err != nil {
		return err
	}
	var mod *convergev1.KindManifest
	for _, m := range stds {
		if m.Manifest.GetKind() == "std.terraform" {
			mod = m.Manifest
		}
	}
	settings, _ := json.Marshal(map[string]any{"binary": binary, "env": map[string]string{"TF_CLI_CONFIG_FILE": cliConfig}})
	type subject struct {
		name     string
		manifest *convergev1.KindManifest
		spec     func(i int) any
	}
	subjects := []subject{
		{"generated tf.time.static", gen[0], func(i int) any { return map[string]any{"triggers": map[string]string{"i": fmt.Sprint(i)}} }},
		{"module std.terraform   ", mod, func(i int) any {
			return map[string]any{"source": module, "variables": map[string]any{"triggers": map[string]string{"i": fmt.Sprint(i)}}}
		}},
	}
	fmt.Printf("terraform per reconcile over %d reconciles of one time_static (median, p90)\n", n)
	// The two are measured in turns, so that the machine's noise falls on
	// both alike.
	type timings struct{ changed, same []time.Duration }
	runs := make([]func(i int) (time.Duration, error), len(subjects))
	results := make([]timings, len(subjects))
	for k, s := range subjects {
		hs, err := stdterraform.Handlers(provider.Served{Manifest: s.manifest, Settings: settings}, provider.Env{StateDir: filepath.Join(work, s.manifest.GetKind())})
		if err != nil {
			return err
		}
		apply := hs["apply"]
		runs[k] = func(i int) (time.Duration, error) {
			spec, _ := json.Marshal(s.spec(i))
			t := &converge.Task{Kind: s.manifest.GetKind(), KindVersion: 1, Reaction: "apply", Trigger: "specChange",
				Namespace: "default", Name: "bench", Generation: int64(i + 1), Spec: spec, Attempt: 1}
			begin := time.Now()
			if _, err := apply(ctx, t); err != nil {
				return 0, fmt.Errorf("%s: %w", s.name, err)
			}
			return time.Since(begin), nil
		}
	}
	for i := range n + 1 { // the first round warms up: the provider is installed
		for k, run := range runs {
			changed, err := run(i)
			if err != nil {
				return err
			}
			same, err := run(i)
			if err != nil {
				return err
			}
			if i > 0 {
				results[k].changed = append(results[k].changed, changed)
				results[k].same = append(results[k].same, same)
			}
		}
	}
	for k, s := range subjects {
		fmt.Printf("%s   spec change (replace): %s   unchanged: %s\n", s.name, summarize(results[k].changed), summarize(results[k].same))
	}
	return nil
}
