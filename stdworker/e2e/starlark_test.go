//go:build unix

package e2e

import (
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// TestStarlarkComposer: a kind composed by a Starlark bundle (the
// stdstarlark example's) creates its std.shell children with edges and
// value flows, each stage running after the previous one with its output,
// and the root becomes Ready; an endless loop fails on the step limit,
// naming the file and line.
func TestStarlarkComposer(t *testing.T) {
	d := startDev(t)
	d.kindsApply(t)
	kinds, err := os.ReadFile(repoPath(t, "stdworker/examples/stdstarlark/kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d.apply(t, string(kinds))
	w := d.stdworker(t, "--config", repoPath(t, "stdworker/examples/stdstarlark/stdworker.yaml"))
	w.waitOutput(t, "kind=example.pipeline@1", 30*time.Second)

	d.apply(t, `
type: resource
kind: example.pipeline
kind_version: 1
name: flow
spec: {message: hi, stages: 3}
---
type: resource
kind: example.spinner
kind_version: 1
name: spin
spec: {}
`)
	r := d.waitPhase(t, "example.pipeline", "flow", client.PhaseReady, 2*time.Minute)
	if st := statusOf(t, r); st["stages"] != float64(3) || st["last"] != "flow-stage-2" {
		t.Errorf("pipeline status %v: want stages 3 and last flow-stage-2", st)
	}
	last := d.get(t, "std.shell", "flow-stage-2")
	if got := statusOf(t, last)["stdout_tail"]; got != "hi -> 0 -> 1 -> 2" {
		t.Errorf("the last stage printed %q; want each stage's output flowed into the next: %q", got, "hi -> 0 -> 1 -> 2")
	}
	if owner := last.GetOwner(); owner.GetKind() != "example.pipeline" || owner.GetName() != "flow" {
		t.Errorf("the last stage's owner is %v; want example.pipeline/flow", owner)
	}

	// A plan of one more stage is composed by the bundle itself, through
	// a preview task to this stdworker; nothing of it is applied.
	res := d.conctl(t, "type: resource\nkind: example.pipeline\nkind_version: 1\nname: flow\nspec: {message: hi, stages: 4}\n",
		"plan", "-f", "-", "-o", "json")
	plan := &convergev1.PlanChangeResponse{}
	if res.code != 0 || protojson.Unmarshal([]byte(res.stdout), plan) != nil || len(plan.GetComposites()) != 1 {
		t.Fatalf("plan of a fourth stage:\n%s", res)
	}
	cp := plan.GetComposites()[0]
	actions := map[string]string{}
	for _, c := range cp.GetChildren() {
		actions[c.GetName()] = c.GetAction()
	}
	if cp.GetNotPreviewed() != "" || actions["flow-stage-3"] != "create" || len(actions) != 4 || plan.GetTotals().GetPrune() != 0 {
		t.Errorf("the plan of a fourth stage: %s", protojson.Format(cp))
	}
	if _, err := d.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: "std.shell", Name: "flow-stage-3"}); err == nil {
		t.Errorf("the plan created flow-stage-3")
	}

	r = d.waitPhase(t, "example.spinner", "spin", client.PhaseFailed, 2*time.Minute)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), "spin.star:6:9: step limit") {
		t.Errorf("failure %v: want a terminal step-limit failure naming spin.star:6:9", f)
	}
}

// TestStarlarkExample runs stdworker/examples/stdstarlark/run.sh, the
// one-command demo, against the binaries under test.
func TestStarlarkExample(t *testing.T) {
	begin(t)
	res := runExample(t, "stdworker/examples/stdstarlark/run.sh")
	for _, want := range []string{
		"stdout_tail: hello -> 0 -> 1 -> 2",
		"Message:          spin.star:6:9: step limit: the program ran more than 100000 steps",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("run.sh printed no %q\n%s", want, res)
		}
	}
}

// TestStarlarkSyntaxError: a bundle that does not parse still lets
// stdworker start; the resources it composes fail terminally with the
// file, line and column, and the next task after the file is fixed
// succeeds, with no restart.
func TestStarlarkSyntaxError(t *testing.T) {
	d := startDev(t)
	dir := t.TempDir()
	main := writeFile(t, dir, "bundle/main.star", "def compose(ctx)\n    return []\n", 0o644)
	config := writeFile(t, dir, "stdworker.yaml", "kinds:\n  - {kind: t2.empty, version: 1, provider: stdstarlark, settings: {dir: ./bundle}}\n", 0o644)
	d.apply(t, `
type: manifest
kind: t2.empty
kind_version: 1
reactions:
  - {name: compose, trigger: specChange, emits: [children, status]}
`)
	w := d.stdworker(t, "--config", config)
	w.waitOutput(t, "kind=t2.empty@1", 30*time.Second)
	d.apply(t, "type: resource\nkind: t2.empty\nkind_version: 1\nname: e\nspec: {n: 1}\n")
	r := d.waitPhase(t, "t2.empty", "e", client.PhaseFailed, time.Minute)
	if f := r.GetFailure(); !f.GetTerminal() || !strings.Contains(f.GetMessage(), "main.star:2:1: got newline, want ':'") {
		t.Errorf("failure %v: want a terminal failure with the syntax error's position", f)
	}

	if err := os.WriteFile(main, []byte("def compose(ctx):\n    return {\"status\": {\"n\": ctx.spec[\"n\"]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d.apply(t, "type: resource\nkind: t2.empty\nkind_version: 1\nname: e\nspec: {n: 2}\n")
	r = d.waitPhase(t, "t2.empty", "e", client.PhaseReady, time.Minute)
	if st := statusOf(t, r); st["n"] != float64(2) {
		t.Errorf("status %v after the fix: want n 2", st)
	}
}
