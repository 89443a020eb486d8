package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/server/internal/store"
)

// TestReasonsListsEveryReasonConstant holds Reasons to the Reason*
// constants of reasons.go: a constant added without its entry would be
// emitted yet missing from the docs (and from their test below).
func TestReasonsListsEveryReasonConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Reason") {
					consts[n.Name] = true
				}
			}
		}
	}
	listed := map[string]bool{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if vs.Names[0].Name != "Reasons" {
				continue
			}
			for _, e := range vs.Values[0].(*ast.CompositeLit).Elts {
				listed[e.(*ast.Ident).Name] = true
			}
		}
	}
	if len(consts) < 20 {
		t.Fatalf("found %d Reason constants in reasons.go; the parser is wrong", len(consts))
	}
	for c := range consts {
		if !listed[c] {
			t.Errorf("%s is not in Reasons", c)
		}
	}
	seen := map[string]bool{}
	for _, r := range Reasons {
		if seen[r] {
			t.Errorf("Reasons lists %q twice", r)
		}
		seen[r] = true
	}
}

// TestTroubleshootingCoversReasons holds docs/troubleshooting.md to
// Reasons: each reason the server emits has its section there, and the
// page has no section for a reason the server does not emit.
func TestTroubleshootingCoversReasons(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading := regexp.MustCompile("(?m)^### `([A-Za-z]+)`$")
	page := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		page[m[1]] = true
	}
	code := map[string]bool{}
	for _, r := range Reasons {
		code[r] = true
	}
	var missing, extra []string
	for r := range code {
		if !page[r] {
			missing = append(missing, r)
		}
	}
	for r := range page {
		if !code[r] {
			extra = append(extra, r)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("docs/troubleshooting.md has no \"### `Reason`\" section for %s", strings.Join(missing, ", "))
	}
	if len(extra) > 0 {
		t.Errorf("docs/troubleshooting.md documents %s, which api.Reasons does not list", strings.Join(extra, ", "))
	}
}

// TestConditionsEmitOnlyListedReasons derives the conditions of resources
// in every wait state and phase and checks each built-in reason is one of
// Reasons, so a literal reason added at an emitting site fails here.
func TestConditionsEmitOnlyListedReasons(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range Reasons {
		listed[r] = true
	}
	seen := map[string]bool{}
	for _, r := range conditionSamples() {
		for _, c := range conditions(r, parkedSample) {
			seen[c.GetReason()] = true
			if !listed[c.GetReason()] {
				t.Errorf("condition %s of a resource in phase %s waiting %q has reason %q, not in Reasons",
					c.GetType(), r.Phase, r.Wait, c.GetReason())
			}
		}
	}
	// The samples reach most reasons; if they reach few, they are broken.
	if len(seen) < 15 {
		t.Fatalf("the samples produced only %d reasons: %v", len(seen), seen)
	}
}

// parkedSample says the task of kind "noworker" has no worker and that
// of kind "notready" has workers that are not ready.
func parkedSample(kind string, _ int32, _ string) (string, bool, string) {
	switch kind {
	case "noworker":
		return "reconcile", true, ""
	case "notready":
		return "reconcile", true, "no credentials"
	}
	return "", false, ""
}

// conditionSamples are resources in every phase, hold and wait state,
// deleting or not, failed with and without a reason code.
func conditionSamples() []store.Resource {
	msg, waiting := "it broke", "waiting for vpc/a"
	var out []store.Resource
	for _, phase := range client.Phases() {
		for _, wait := range []string{"", store.HoldDeleting, store.HoldQuarantined, store.HoldFailed, store.HoldOrphaned,
			store.HoldWaiting, store.WaitRunning, store.WaitBackoff, store.WaitCapped, store.WaitWorker, store.WaitUnqueued} {
			for i, kind := range []string{"plain", "noworker", "notready"} {
				r := store.Resource{Kind: kind, Name: "n" + strconv.Itoa(i), Phase: phase, Wait: wait, Generation: 2, SyncedGeneration: 1,
					Task: &store.PendingTask{Trigger: "specChange"}}
				out = append(out, r)
				failed := r
				failed.FailureMessage, failed.FailureAttempts = &msg, 3
				out = append(out, failed)
				deleting := failed
				now := time.Now()
				deleting.DeletionRequestedAt = &now
				out = append(out, deleting)
				gated := r
				gated.Waiting = &waiting
				out = append(out, gated)
			}
		}
	}
	synced := store.Resource{Phase: client.PhaseReady, Generation: 1, SyncedGeneration: 1}
	return append(out, synced)
}
