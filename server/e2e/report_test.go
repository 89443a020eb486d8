//go:build unix

package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// notReady matches resources that are not Ready.
func notReady(r *convergev1.Resource) bool { return r.GetPhase() != client.PhaseReady }

// checkAppliedOnce asserts that each resource's one generation was
// reconciled, and its result applied, exactly once.
func checkAppliedOnce(t *testing.T, all []*convergev1.Resource) {
	t.Helper()
	bad := func(r *convergev1.Resource) bool {
		return r.GetReconciles() != 1 || r.GetGeneration() != 1 || r.GetSyncedGeneration() != r.GetGeneration()
	}
	n := 0
	for _, r := range all {
		if bad(r) {
			n++
		}
	}
	if n > 0 {
		t.Errorf("%d of %d resources were not applied exactly once at generation 1 (want reconciles 1, generation 1 = synced_generation): %s",
			n, len(all), describeSome(all, bad))
	}
}

// phaseCounts renders how many resources are in each phase.
func phaseCounts(all []*convergev1.Resource) string {
	counts := map[string]int{}
	for _, r := range all {
		counts[r.GetPhase()]++
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s=%d", p, counts[p]))
	}
	return strings.Join(parts, " ")
}

// describeSome renders up to ten resources that match.
func describeSome(all []*convergev1.Resource, match func(*convergev1.Resource) bool) string {
	const most = 10
	var parts []string
	n := 0
	for _, r := range all {
		if !match(r) {
			continue
		}
		n++
		if len(parts) < most {
			parts = append(parts, describe(r))
		}
	}
	if n > most {
		parts = append(parts, fmt.Sprintf("and %d more", n-most))
	}
	return strings.Join(parts, "; ")
}

func describe(r *convergev1.Resource) string {
	s := fmt.Sprintf("%s/%s phase=%s gen=%d synced=%d reconciles=%d", r.GetKind(), r.GetName(), r.GetPhase(),
		r.GetGeneration(), r.GetSyncedGeneration(), r.GetReconciles())
	if f := r.GetFailure(); f != nil {
		s += fmt.Sprintf(" failure=%q (attempts %d, terminal %t)", f.GetMessage(), f.GetAttempts(), f.GetTerminal())
	}
	return s
}
