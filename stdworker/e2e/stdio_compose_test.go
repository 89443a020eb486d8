//go:build unix

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

const composeKinds = `
type: manifest
kind: t.leaf
kind_version: 1
reactions:
  - {name: reconcile, trigger: specChange, emits: [status]}
  - {name: double, trigger: operation, verb: double, emits: [operationOutput]}
operations:
  - verb: double
---
type: manifest
kind: t.parent
kind_version: 1
reactions:
  - {name: compose, trigger: specChange, emits: [children, edges, status]}
`

// leafProgram serves t.leaf's reconcile and its "double" operation.
const leafProgram = `#!/usr/bin/env bash
set -euo pipefail
req=$(cat)
case $(jq -r .reaction.trigger <<<"$req") in
specChange) jq -c '{status: {value: (.spec.n * 2), input: .spec.input}}' <<<"$req" ;;
operation) jq -c '{output: {doubled: (.status.value * 2), verb: .operation.verb, times: .operation.input.times}}' <<<"$req" ;;
esac
`

// parentProgram composes two leaves; b waits for a and gets a's value.
const parentProgram = `#!/usr/bin/env bash
set -euo pipefail
jq -c '.resource.name as $p | {
	status: {children: 2},
	children: [
		{kind: "t.leaf", version: 1, name: ($p + "-a"), labels: {role: "source"}, spec: {n: .spec.n}},
		{kind: "t.leaf", version: 1, name: ($p + "-b"), spec: {n: 1}}
	],
	edges: [{dependent: {kind: "t.leaf", name: ($p + "-b")}, dependency: {kind: "t.leaf", name: ($p + "-a")},
		flows: [{from: "/value", to: "/input"}]}]
}'
`

// TestStdioComposerAndOperation: a bash composer's children, edges and
// value flows reach the server, and a bash operation's output reaches the
// operator.
func TestStdioComposerAndOperation(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("skipped: the bash stdio test programs need jq, which is not on PATH")
	}
	d := startDev(t)
	dir := t.TempDir()
	writeFile(t, dir, "leaf.sh", leafProgram, 0o755)
	writeFile(t, dir, "parent.sh", parentProgram, 0o755)
	config := writeFile(t, dir, "stdworker.yaml", `
kinds:
  - {kind: t.leaf, version: 1, provider: stdio, settings: {command: [./leaf.sh]}}
  - {kind: t.parent, version: 1, provider: stdio, settings: {command: [./parent.sh]}}
`, 0o644)
	d.apply(t, composeKinds+"---\ntype: resource\nkind: t.parent\nkind_version: 1\nname: p\nspec: {n: 21}\n")
	d.stdworker(t, "--config", config)

	d.waitPhase(t, "t.parent", "p", client.PhaseReady, time.Minute)
	b := d.waitPhase(t, "t.leaf", "p-b", client.PhaseReady, time.Minute)
	if got := fmt.Sprint(statusOf(t, b)["input"]); got != "42" {
		t.Errorf("p-b's status.input = %s, want 42: the value did not flow from p-a's status.value\n%s", got, show(b))
	}
	if a := d.get(t, "t.leaf", "p-a"); a.GetLabels()["role"] != "source" || a.GetOwner().GetName() != "p" {
		t.Errorf("p-a: labels %v, owner %v; want the composer's labels and p as owner", a.GetLabels(), a.GetOwner())
	}

	input, _ := structpb.NewStruct(map[string]any{"times": 3})
	resp, err := d.api.InvokeOperation(t.Context(), &convergev1.InvokeOperationRequest{Kind: "t.leaf", Name: "p-a", Verb: "double", Input: input})
	if err != nil {
		t.Fatalf("invoke double on p-a: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	op, err := d.api.WaitForOperation(ctx, resp.GetOperation().GetId(), client.WithPollInterval(200*time.Millisecond))
	if err != nil {
		t.Fatalf("waiting for the operation: %v", err)
	}
	out := op.GetOutput().AsMap()
	if op.GetState() != client.OperationSucceeded || out["doubled"] != float64(84) || out["verb"] != "double" || out["times"] != float64(3) {
		t.Errorf("operation %s, output %v, message %q; want succeeded with doubled 84, verb double, times 3", op.GetState(), out, op.GetMessage())
	}
}
