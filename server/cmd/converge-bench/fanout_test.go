package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// findTarget returns the target of workload with the figure, or fails.
func findTarget(t *testing.T, ts []target, workload, figure string) target {
	t.Helper()
	for _, x := range ts {
		if x.workload == workload && x.figure == figure {
			return x
		}
	}
	t.Fatalf("no target %s %q among %+v", workload, figure, ts)
	return target{}
}

func TestTargetsCompositesAgainstLeaves(t *testing.T) {
	r := &results{
		selected: map[string]bool{"composites": true, "fanout100k": true, "w1": true},
		comps:    []compositeResult{{zoneRate: 2000}, {zoneRate: 4000}, {zoneRate: 9000}},
		w1:       []w1Result{{rate: 10000}, {rate: 5000}, {rate: 8000}},
		wide:     []fanoutWideResult{{fanoutTimes{ready: 8 * time.Second}}, {fanoutTimes{ready: 12 * time.Second}}, {fanoutTimes{ready: 9 * time.Second}}},
	}
	ts := targets(r)
	ratio := findTarget(t, ts, "W4", "resources/s ÷ W1 leaves/s (same run)")
	if !near(ratio.value, 0.5) || ratio.met() {
		t.Errorf("W4 ÷ W1 = %+v, want 4000 ÷ 8000 = 0.5, missed against 0.8", ratio)
	}
	wide := findTarget(t, ts, "W2", "1 → 100,000 root Ready (slowest run)")
	if !near(wide.value, 12000) || wide.met() {
		t.Errorf("1 → 100,000 = %+v, want the slowest run, 12,000 ms, missed against 10 s", wide)
	}
	var out bytes.Buffer
	reportAgainstLeaves(&out, r)
	for _, want := range []string{"| 1 | 10000 | 2000 | 0.20× |", "| 3 | 8000 | 9000 | 1.12× |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the same-run table lacks %q:\n%s", want, out.String())
		}
	}

	// Without W1 in the invocation there is no ratio to give.
	r.w1 = nil
	for _, x := range targets(r) {
		if strings.Contains(x.figure, "W1") {
			t.Errorf("a ratio to W1 without W1: %+v", x)
		}
	}
	out.Reset()
	if reportAgainstLeaves(&out, r); out.Len() != 0 {
		t.Errorf("a same-run table without W1:\n%s", out.String())
	}
}
