//go:build unix

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The chaos suite's own logic, tested without processes: these run in
// -short mode too.

func TestChaosPlanReplays(t *testing.T) {
	top := topology{controls: 2, brokers: 2, workers: 3}
	a := planFaults(42, 45*time.Second, 10*time.Second, 2*time.Second, top)
	b := planFaults(42, 45*time.Second, 10*time.Second, 2*time.Second, top)
	if !slices.Equal(a, b) {
		t.Fatalf("the same seed gave two schedules:\n%s\n%s", renderPlan(a), renderPlan(b))
	}
	if len(a) < 4 {
		t.Fatalf("45s of faults every 10-12s gave %d faults, want at least 4: %s", len(a), renderPlan(a))
	}
	seen := map[faultKind]bool{}
	for i, f := range a {
		if f.at >= 45*time.Second {
			t.Errorf("fault %s is past the 45s fault phase", f)
		}
		if i > 0 {
			if gap := f.at - a[i-1].at; gap < 10*time.Second || gap > 12*time.Second {
				t.Errorf("faults %s and %s are %s apart, want 10s to 12s", a[i-1], f, gap)
			}
		}
		limit := map[faultKind]int{faultKillControl: 2, faultKillBroker: 2, faultKillWorker: 3}[f.kind]
		if f.victim < 0 || (limit > 0 && f.victim >= limit) || (limit == 0 && f.victim != 0) {
			t.Errorf("fault %s: victim %d out of range", f, f.victim)
		}
		if f.kind.isPostgres() {
			f.kind = faultPGFast
		}
		if i < 4 {
			seen[f.kind] = true
		}
	}
	if len(seen) != 4 {
		t.Errorf("the first four faults %s do not cover the four fault types", renderPlan(a[:4]))
	}
	differ := false
	for seed := uint64(43); seed < 53 && !differ; seed++ {
		differ = !slices.Equal(a, planFaults(seed, 45*time.Second, 10*time.Second, 2*time.Second, top))
	}
	if !differ {
		t.Errorf("ten other seeds all gave seed 42's schedule %s", renderPlan(a))
	}
}

func TestChaosConfigFromEnv(t *testing.T) {
	t.Setenv(chaosSeedEnv, "123")
	t.Setenv(chaosDurationEnv, "90s")
	t.Setenv(chaosStrictEnv, "1")
	c, err := chaosConfigFromEnv()
	if err != nil || c.seed != 123 || c.duration != 90*time.Second || c.seedSource != chaosSeedEnv || !c.strict {
		t.Fatalf("chaosConfigFromEnv() = %+v, %v; want seed 123 from %s, 90s, strict", c, err, chaosSeedEnv)
	}
	for _, bad := range []struct{ env, value string }{
		{chaosSeedEnv, "-1"}, {chaosSeedEnv, "abc"}, {chaosDurationEnv, "soon"}, {chaosDurationEnv, "10ms"}, {chaosDurationEnv, "2h"}, {chaosStrictEnv, "maybe"},
	} {
		t.Setenv(chaosSeedEnv, "1")
		t.Setenv(chaosDurationEnv, "45s")
		t.Setenv(chaosStrictEnv, "0")
		t.Setenv(bad.env, bad.value)
		if _, err := chaosConfigFromEnv(); err == nil || !strings.Contains(err.Error(), bad.env) {
			t.Errorf("%s=%q: error %v, want one naming %s", bad.env, bad.value, err, bad.env)
		}
	}
}

// steady returns completions every 1/perSecond from from to to.
func steady(from, to time.Time, perSecond int) []time.Time {
	var out []time.Time
	for at := from; at.Before(to); at = at.Add(time.Second / time.Duration(perSecond)) {
		out = append(out, at)
	}
	return out
}

func TestChaosRecoveryTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fault := t0.Add(10 * time.Second)
	// 20/s, nothing for 2s after the fault, a backlog burst, then 20/s.
	completions := append(steady(t0, fault, 20), steady(fault.Add(2*time.Second), fault.Add(2500*time.Millisecond), 100)...)
	completions = append(completions, steady(fault.Add(2500*time.Millisecond), fault.Add(20*time.Second), 20)...)
	baseline := rateIn(completions, t0, fault)
	if baseline != 20 {
		t.Fatalf("baseline %.2f/s, want 20", baseline)
	}
	// The first window holding 95% of a second's baseline (19) ends 0.2s
	// into the burst: the backlog counts as throughput.
	got := recoveryTime(completions, fault, fault.Add(20*time.Second), baseline, recoveryShare)
	if want := 2200 * time.Millisecond; got != want {
		t.Errorf("recovery %s, want %s", got, want)
	}
	if dip := lowestRate(completions, fault, fault.Add(20*time.Second)); dip != 0 {
		t.Errorf("lowest rate %.2f/s, want 0 (a whole window without completions)", dip)
	}
	if got := recoveryTime(completions[:200], fault, fault.Add(20*time.Second), baseline, recoveryShare); got != -1 {
		t.Errorf("recovery with no completions after the fault: %s, want -1", got)
	}
}

func TestChaosFindDuplicates(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	faults := []faultRecord{{plannedFault: plannedFault{kind: faultKillWorker}, start: at(10), end: at(10.1)}}
	execs := []execution{
		{name: "a", generation: 1, start: at(9.9), end: at(10), record: "w1"},   // killed in flight
		{name: "a", generation: 1, start: at(13.1), end: at(13.3), ended: true}, // its rerun
		{name: "b", generation: 2, start: at(20), end: at(20.2), ended: true},   // far from any fault
		{name: "b", generation: 2, start: at(21), end: at(21.2), ended: true},
		{name: "b", generation: 3, start: at(22), end: at(22.2), ended: true}, // another generation
		{name: "c", generation: 1, start: at(5), end: at(7.5), ended: true},   // ends within a lease of the fault
		{name: "c", generation: 1, start: at(11), end: at(11.2), ended: true},
	}
	dups := findDuplicates(execs, faults, 3*time.Second)
	if len(dups) != 3 {
		t.Fatalf("%d duplicates, want 3 (a@1, b@2, c@1): %v", len(dups), dups)
	}
	for _, d := range dups {
		want := d.name != "b"
		if d.allowed() != want {
			t.Errorf("%s: allowed %t, want %t", d, d.allowed(), want)
		}
	}
}

func TestChaosLostWritesAndAppliedTwice(t *testing.T) {
	acked := map[string]ackedWrite{
		"kept":      {generation: 3, greeting: "g3"},
		"moved-on":  {generation: 3, greeting: "g3"},
		"gone":      {generation: 1, greeting: "g1"},
		"rolled":    {generation: 4, greeting: "g4"},
		"respecced": {generation: 2, greeting: "g2"},
	}
	server := map[string]serverResource{
		"kept":      {name: "kept", generation: 3, greeting: "g3", reconciles: 2, appliedGenerations: 2},
		"moved-on":  {name: "moved-on", generation: 5, greeting: "g5", reconciles: 3, appliedGenerations: 3},
		"rolled":    {name: "rolled", generation: 3, greeting: "g3", reconciles: 3, appliedGenerations: 2},
		"respecced": {name: "respecced", generation: 2, greeting: "other", reconciles: 1, appliedGenerations: 1},
	}
	lost := lostWrites(acked, server)
	want := []string{"gone", "respecced", "rolled"}
	if len(lost) != len(want) {
		t.Fatalf("lost writes %q, want one each for %v", lost, want)
	}
	for i, name := range want {
		if !strings.Contains(lost[i], chaosKind+"/"+name+":") {
			t.Errorf("lost write %d is %q, want one about %s", i, lost[i], name)
		}
	}
	twice := appliedTwice(server)
	if len(twice) != 1 || !strings.Contains(twice[0], "/rolled:") {
		t.Errorf("applied twice: %q, want one about rolled (3 reconciles, 2 generations)", twice)
	}
}

// With a standby, rounds have five types: the replica variant's default
// fault phase holds exactly five faults, one of each.
func TestChaosPlanWithStandby(t *testing.T) {
	top := topology{controls: 2, brokers: 2, workers: 3, standby: true}
	standbyKinds := map[faultKind]bool{}
	for seed := uint64(1); seed <= 20; seed++ {
		plan := planFaults(seed, chaosReplicaDuration, chaosGap, chaosJitter, top)
		if len(plan) != 5 {
			t.Fatalf("seed %d: %s of faults every 10-12s gave %d faults, want 5: %s", seed, chaosReplicaDuration, len(plan), renderPlan(plan))
		}
		seen := map[string]bool{}
		for _, f := range plan {
			kind := string(f.kind)
			switch {
			case f.kind.isStandby():
				standbyKinds[f.kind] = true
				kind = "standby"
			case f.kind.isPostgres():
				kind = "postgres"
			}
			if f.kind.isPostgres() && f.victim != 0 {
				t.Errorf("seed %d: fault %s has victim %d", seed, f, f.victim)
			}
			seen[kind] = true
		}
		if len(seen) != 5 {
			t.Errorf("seed %d: the faults %s do not cover the five fault types", seed, renderPlan(plan))
		}
	}
	if !standbyKinds[faultStandbyFast] || !standbyKinds[faultStandbyKill] {
		t.Errorf("twenty seeds drew the standby faults %v; want both a fast restart and a kill", standbyKinds)
	}
}

// A Watch is complete when it delivered each change of the feed once, in
// each resource's order.
func TestChaosWatchGaps(t *testing.T) {
	feed := map[string][]int64{"a": {1, 2, 3}, "b": {1}}
	if g := watchGaps(feed, map[string][]int64{"a": {1, 2, 3}, "b": {1}}); len(g) != 0 {
		t.Errorf("a complete watch has gaps: %q", g)
	}
	bad := map[string][]int64{"a": {1, 3, 2}, "c": {1}}
	g := watchGaps(feed, bad)
	if len(g) != 3 || !strings.Contains(g[0], "chaos/a") || !strings.Contains(g[1], "chaos/b") || !strings.Contains(g[2], "chaos/c") {
		t.Errorf("reordered, missing and unknown changes gave %q", g)
	}
	if g := watchGaps(feed, map[string][]int64{"a": {1, 2, 2, 3}, "b": {1}}); len(g) != 1 {
		t.Errorf("a repeated change gave %q", g)
	}
}
