package conctl_test

import (
	"strings"
	"testing"
)

// TestTimeoutBoundsTheWait: on every command that can wait, --timeout is
// how long --wait waits; the limit of each call is the global
// --request-timeout. "apply --wait --timeout 2m" used to set the per-call
// limit and leave the wait at its 5-minute default.
func TestTimeoutBoundsTheWait(t *testing.T) {
	_, url := newFake(t)
	for _, cmd := range [][]string{{"apply"}, {"delete", "resource"}, {"sync"}, {"rollback"}, {"reconcile"}, {"op"}} {
		r := run(testContext(t), url, "", append(cmd, "--help")...)
		if !strings.Contains(r.stdout, "--timeout duration") || !strings.Contains(r.stdout, "how long --wait waits in all") ||
			!strings.Contains(r.stdout, "--request-timeout duration") || strings.Contains(r.stdout, "--wait-timeout") {
			t.Errorf("conctl %s --help: want --timeout bounding --wait, --request-timeout, and no --wait-timeout:\n%s", strings.Join(cmd, " "), r.stdout)
		}
	}
	r := run(testContext(t), url, "", "--help")
	if strings.Contains(r.stdout, "--timeout duration") || !strings.Contains(r.stdout, "--request-timeout duration   time limit for each call to the server") {
		t.Errorf("conctl --help: want --request-timeout and no --timeout:\n%s", r.stdout)
	}
}

// TestOldTimeoutFlags: --wait-timeout still bounds the wait, with a notice
// of its new name; --timeout where nothing waits says where the per-call
// limit went; a negative --request-timeout is refused.
func TestOldTimeoutFlags(t *testing.T) {
	_, url := newFake(t)
	r := waitResult(t, func() <-chan result {
		_, _, done := background(testContext(t), url, resourceDocs("a"), "apply", "-f", "-", "--wait", "--wait-timeout", "300ms")
		return done
	}())
	if r.code != 1 || !strings.Contains(r.stderr, "warning: --wait-timeout is now called --timeout") ||
		!strings.Contains(r.stderr, "error: timed out after 300ms waiting for 1 of 1 resources") {
		t.Errorf("apply --wait --wait-timeout 300ms: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = run(testContext(t), url, "", "get", "resource", "greeting/a", "--timeout", "5s")
	if r.code != 1 || !strings.Contains(r.stderr, "error: unknown flag: --timeout (--timeout bounds --wait on the commands that wait; "+
		"the time limit of each call to the server is --request-timeout)") {
		t.Errorf("get --timeout: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	r = run(testContext(t), url, "", "list", "kinds", "--request-timeout", "-1s")
	if r.code != 1 || !strings.Contains(r.stderr, "error: --request-timeout: -1s is negative") {
		t.Errorf("--request-timeout -1s: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
