package conctl_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/testkit"
)

func TestWatchPrintsOneLinePerChange(t *testing.T) {
	f, url := newFake(t)
	f.add(&convergev1.Resource{Namespace: "default", Kind: "greeting", Name: "hello", Phase: "Reconciling", Generation: 2})
	f.add(&convergev1.Resource{Namespace: "default", Kind: "other", Name: "x", Phase: "Reconciling"})
	ctx, cancel := context.WithCancel(testContext(t))
	out, _, done := background(ctx, url, "", "watch", "--kind", "greeting")

	req := f.waitRegistered(t)
	if req.Namespace != "default" || req.Kind != "greeting" || req.Name != "" {
		t.Fatalf("watch request = %v", req)
	}
	f.setPhase("default", "other", "x", "Ready", "")
	f.setPhase("default", "greeting", "hello", "Failed", "quota\nexceeded")
	f.remove("default", "greeting", "hello")
	want := "2026-11-29T12:00:00Z updated default/greeting/hello Reconciling -> Failed gen=2 quota exceeded\n" +
		"2026-11-29T12:00:00Z deleted default/greeting/hello Failed -> - gen=0\n"
	testkit.Poll(t, "two watch lines", out.String, func(s string) bool { return s == want })
	cancel()
	r := waitResult(t, done)
	if r.code != 0 {
		t.Fatalf("interrupting watch must exit 0, got %d: %s", r.code, r.stderr)
	}
}

func TestWatchJSONLines(t *testing.T) {
	f, url := newFake(t)
	f.add(&convergev1.Resource{Namespace: "team-a", Kind: "greeting", Name: "hello", Phase: "Reconciling"})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	out, _, done := background(ctx, url, "", "watch", "-A", "-o", "json", "--cursor", "0")

	req := f.waitRegistered(t)
	if req.Namespace != "" || req.Cursor != "0" {
		t.Fatalf("watch request = %v, want all namespaces from cursor 0", req)
	}
	f.setPhase("team-a", "greeting", "hello", "Ready", "")
	testkit.Poll(t, "a JSON line", out.String, func(s string) bool { return strings.HasSuffix(s, "\n") })
	var ch map[string]any
	if err := json.Unmarshal([]byte(out.String()), &ch); err != nil {
		t.Fatalf("line is not one JSON object: %v\n%s", err, out.String())
	}
	if ch["phase"] != "Ready" || ch["previous_phase"] != "Reconciling" || ch["namespace"] != "team-a" {
		t.Fatalf("change = %v", ch)
	}
	cancel()
	waitResult(t, done)
}

func TestWatchNameNeedsKind(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, "", "watch", "--name", "hello")
	if r.code != 1 || !strings.HasPrefix(r.stderr, "error: --name needs --kind\n") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}
