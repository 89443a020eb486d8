package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func samplesOf(counts map[string]int) waitSamples {
	var s waitSamples
	for class, n := range counts {
		for range n {
			s.add(class)
		}
	}
	s.polls = 1
	return s
}

func TestWaitRowsSharesAndOrder(t *testing.T) {
	runs := []waitSamples{
		samplesOf(map[string]int{"CPU": 60, "IO:WALSync": 30, "LWLock:WALWrite": 10}),
		samplesOf(map[string]int{"CPU": 50, "IO:WALSync": 40, "Lock:object": 10}),
		samplesOf(map[string]int{"CPU": 70, "IO:WALSync": 20, "LWLock:WALWrite": 10}),
	}
	rows := waitRows(runs, 8)
	var got []string
	for _, r := range rows {
		med, lo, hi := median(r.shares)
		got = append(got, fmt.Sprintf("%s %.0f (%.0f–%.0f)", r.class, med, lo, hi))
	}
	want := []string{
		"CPU 60 (50–70)",
		"IO:WALSync 30 (20–40)",
		"LWLock:WALWrite 10 (0–10)",
		"Lock:object 0 (0–10)",
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("rows = %q, want %q", got, want)
	}
}

func TestWaitRowsTopKeepsLockObject(t *testing.T) {
	counts := map[string]int{"Lock:object": 1}
	for i := range 10 {
		counts[fmt.Sprintf("IO:E%d", i)] = 10 + i
	}
	rows := waitRows([]waitSamples{samplesOf(counts)}, 3)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want the top 3 and Lock:object", len(rows))
	}
	for i, class := range []string{"IO:E9", "IO:E8", "IO:E7", "Lock:object"} {
		if rows[i].class != class {
			t.Errorf("row %d = %s, want %s", i, rows[i].class, class)
		}
	}
	if s := rows[3].shares[0]; s <= 0 || s >= 1 {
		t.Errorf("Lock:object share = %f%%, want 1 of %d samples", s, samplesOf(counts).total)
	}
}

func TestWaitRowsTopIncludingLockObjectAddsNoRow(t *testing.T) {
	rows := waitRows([]waitSamples{samplesOf(map[string]int{"Lock:object": 5, "CPU": 5, "IO:DataFileRead": 1})}, 2)
	if len(rows) != 2 || rows[0].class != "CPU" || rows[1].class != "Lock:object" {
		t.Errorf("rows = %+v, want CPU then Lock:object (ties by name)", rows)
	}
}

func TestWaitRowsSkipsRunsWithoutSamples(t *testing.T) {
	if rows := waitRows([]waitSamples{{polls: 3}}, 8); rows != nil {
		t.Errorf("rows = %+v, want none without samples", rows)
	}
	rows := waitRows([]waitSamples{{polls: 3}, samplesOf(map[string]int{"CPU": 4})}, 8)
	if len(rows) != 2 || len(rows[0].shares) != 1 || rows[0].shares[0] != 100 {
		t.Errorf("rows = %+v, want CPU at 100%% from the one sampled run, then Lock:object", rows)
	}
}

func TestReportWaitsRows(t *testing.T) {
	var b bytes.Buffer
	reportWaits(&b, []waitSamples{samplesOf(map[string]int{"CPU": 3, "IO:WALSync": 1})})
	out := b.String()
	for _, want := range []string{"| Waits: CPU | 75.0 % | 75.0 – 75.0 |", "| Waits: IO:WALSync | 25.0 % |", "| Waits: Lock:object (NOTIFY health) | 0.0 % |"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	reportWaits(&b, []waitSamples{{}})
	if b.Len() != 0 {
		t.Errorf("report without polls = %q, want nothing", b.String())
	}
}

func TestStatementCell(t *testing.T) {
	got := statementCell("SELECT a\n\t  FROM t WHERE x = 1 OR y || `z`")
	if want := "`SELECT a FROM t WHERE x = 1 OR y \\|\\| 'z'`"; got != want {
		t.Errorf("statementCell = %s, want %s", got, want)
	}
	long := statementCell(strings.Repeat("é", 100))
	if n := len([]rune(long)); n != 90+3 {
		t.Errorf("long statement cell has %d runes, want 90, an ellipsis and two backticks", n)
	}
}

func TestMedianRun(t *testing.T) {
	runs := []w1Result{{rate: 300}, {rate: 100}, {rate: 200}, {rate: 400}}
	if i := medianRun(runs); i != 2 {
		t.Errorf("median run = %d, want 2 (rate 200, the slower middle one)", i)
	}
	if i := medianRun(runs[:3]); i != 2 {
		t.Errorf("median run of three = %d, want 2", i)
	}
	if i := medianRun(nil); i != -1 {
		t.Errorf("median run of none = %d, want -1", i)
	}
}
