//go:build unix

package e2e

import (
	"regexp"
	"testing"
)

// TestBenchPrintsFigures runs stdworker-bench briefly against a dev server:
// it must measure both the handler and the end-to-end figures.
func TestBenchPrintsFigures(t *testing.T) {
	d := startDev(t)
	res := run(t, "", bin.bench, "-server", d.url, "-tasks", "20")
	if res.code != 0 {
		t.Fatalf("%s", res)
	}
	for _, line := range []string{`handler call   go: \S+ \(p90 \S+\)   stdio: \S+ \(p90 \S+\)   stdio overhead: \S+`,
		`end to end     go: \S+ \(p90 \S+\)   stdio: \S+ \(p90 \S+\)   stdio overhead: \S+`} {
		if !regexp.MustCompile(line).MatchString(res.stdout) {
			t.Errorf("stdworker-bench printed no line matching %q\n%s", line, res)
		}
	}
}
