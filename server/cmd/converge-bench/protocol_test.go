package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*math.Max(1, math.Abs(b)) }

func TestCurveDecilesSteady(t *testing.T) {
	// 1,000 completions in batches of 10, one batch every 10 ms: 1,000/s.
	var c curve
	for k := 1; k <= 100; k++ {
		c = append(c, curvePoint{at: 100 + float64(k)*0.01, done: 10 * k})
	}
	ds := c.deciles()
	if len(ds) != 10 {
		t.Fatalf("deciles = %v, want 10", ds)
	}
	for i := 0; i < 10; i++ {
		if !near(ds[i], 1000) {
			t.Errorf("decile %d = %f, want 1000", i+1, ds[i])
		}
	}
}

func TestCurveDecilesSlowing(t *testing.T) {
	// The second half of the completions comes at a quarter of the rate.
	var c curve
	at := 0.0
	for k := 1; k <= 200; k++ {
		if k <= 100 {
			at += 0.01
		} else {
			at += 0.04
		}
		c = append(c, curvePoint{at: at, done: 10 * k})
	}
	ds := c.deciles()
	r := drainResult{deciles: ds}
	if got := r.ratio(); !near(got, 0.25) {
		t.Errorf("last ÷ first = %f, want about 0.25 (deciles %v)", got, ds)
	}
}

func TestCurveDecilesFirstBatchTooLarge(t *testing.T) {
	c := curve{{at: 1, done: 150}, {at: 2, done: 300}, {at: 3, done: 1000}}
	if ds := c.deciles(); ds != nil {
		t.Errorf("deciles = %v, want none: the first batch holds more than a tenth", ds)
	}
	if r := (drainResult{}); !math.IsNaN(r.ratio()) {
		t.Errorf("ratio without deciles = %f, want NaN", r.ratio())
	}
}

func TestCurveRecovery(t *testing.T) {
	// 100/s until t=10, 10/s until 20, then 100/s again until 30.
	var c curve
	done := 0
	for at := 0.1; at < 30; at += 0.1 {
		switch {
		case at < 10 || at >= 20:
			done += 10
		default:
			done++
		}
		c = append(c, curvePoint{at: at, done: done})
	}
	got, ok := c.recoveryAfter(15, 90)
	if !ok {
		t.Fatal("no recovery found")
	}
	// The window starting at ~19.1 s holds 9 + 9×10 = 99 completions.
	if got < 3*time.Second || got > 5*time.Second {
		t.Errorf("recovery = %s, want about 4 s", got)
	}
	if _, ok := c.recoveryAfter(29.5, 90); ok {
		t.Error("recovery found with less than a second of drain left")
	}
}

func TestParseFsync(t *testing.T) {
	out := `Compare file sync methods using one 8kB write:
(in wal_sync_method preference order, except fdatasync is Linux's default)
        open_datasync                      3532.123 ops/sec     283 usecs/op
        fdatasync                          4414.042 ops/sec     227 usecs/op
        fsync                              3113.000 ops/sec     321 usecs/op

Compare file sync methods using two 8kB writes:
        fdatasync                          2000.000 ops/sec     500 usecs/op
`
	f := parseFsync(out)
	if f.usPerOp != 227 || f.opsSec != 4414.042 {
		t.Errorf("parseFsync = %+v, want 227 µs/op, 4414.042 ops/s (the one-write line)", f)
	}
	if f := parseFsync("nothing"); f.usPerOp != 0 || !strings.Contains(f.line, "no fdatasync line") {
		t.Errorf("parseFsync of no line = %+v", f)
	}
}

func TestRSSSlope(t *testing.T) {
	ps := []rssPoint{{0, 50, 0}, {100_000, 60, 0}, {500_000, 100, 0}, {1_000_000, 150, 0}}
	if got := rssSlope(ps); !near(got, 10) {
		t.Errorf("slope = %f, want 10 MiB per 100k", got)
	}
	if got := rssSlope(ps[:1]); got != 0 {
		t.Errorf("slope of one point = %f, want 0", got)
	}
}

func TestTargetVerdict(t *testing.T) {
	for _, tc := range []struct {
		t    target
		want string
	}{
		{target{value: 2500, goal: 2000, unit: "/s"}, "met"},
		{target{value: 1500, goal: 2000, unit: "/s"}, "**missed** by 500 /s, 25%"},
		{target{value: 3000, goal: 2048, unit: "B", atMost: true}, "**missed** by 952 B, 46%"},
		{target{value: 0.4, goal: 0.5, atMost: false}, "**missed** by 0.100, 20%"},
		{target{value: 2048, goal: 2048, atMost: true}, "met"},
	} {
		if got := tc.t.verdict(); got != tc.want {
			t.Errorf("verdict(%+v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestSelectWorkloads(t *testing.T) {
	all, err := selectWorkloads("all")
	if err != nil {
		t.Fatal(err)
	}
	if all["rest"] || !all["calibrate"] || !all["drain"] || !all["w1"] {
		t.Errorf("all = %v: want every workload but rest", all)
	}
	sel, err := selectWorkloads("calibrate, rest")
	if err != nil || !sel["calibrate"] || !sel["rest"] || sel["w1"] {
		t.Errorf("calibrate,rest = %v, %v", sel, err)
	}
	if _, err := selectWorkloads("w1,w9"); err == nil || !strings.Contains(err.Error(), `"w9"`) {
		t.Errorf("unknown workload error = %v, want it to name w9", err)
	}
}
