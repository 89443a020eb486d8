package maintenance

import (
	"fmt"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

// TestConfigRequeuer: after an edit of the default provider config, the
// requeuer reconciles again every settled resource on it, at most its rate
// a pass, with a wake-up, and records the change as done on the kind.
func TestConfigRequeuer(t *testing.T) {
	e := newEnv(t)
	v := store.ConfigValidator{KindRevision: e.rev, Validate: func([]byte) error { return nil }}
	if _, _, err := e.st.ApplyProviderConfig(e.ctx, store.ProviderConfig{Kind: "leaf", Version: 1, Name: "default",
		Config: []byte(`{"tier":"small"}`)}, v); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		e.apply("leaf", e.rev, fmt.Sprintf("r%d", i), `{}`)
	}
	for range 5 {
		task := e.claim("leaf", trigger.SpecChange, "m1", time.Minute)
		if _, err := e.st.ApplyOutcomes(e.ctx, []store.Outcome{{Lease: task.Lease, Status: []byte(`{}`)}}, store.Backoff{Base: time.Second, Max: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := e.st.ApplyProviderConfig(e.ctx, store.ProviderConfig{Kind: "leaf", Version: 1, Name: "default",
		Config: []byte(`{"tier":"large"}`)}, v); err != nil {
		t.Fatal(err)
	}
	e.drainWake()
	// Two a pass (rate 100/s at 20 ms passes): five take three passes.
	e.run(NewConfigRequeuer(tick, 100, e.st, e.bus, quiet))
	e.wokeUp("requeueing after a config edit")
	testkit.Eventually(t, "every resource queued again", func() bool {
		for i := range 5 {
			if r := e.get("leaf", fmt.Sprintf("r%d", i)); r.Task == nil || r.Task.Trigger != trigger.SpecChange {
				return false
			}
		}
		return true
	})
	if ev := e.lastEvent("leaf", "r0"); ev.Reason != "ConfigChanged" {
		t.Fatalf("r0's last event = %s %q, want ConfigChanged", ev.Reason, ev.Message)
	}
	testkit.Eventually(t, "the change to be done", func() bool {
		pending, err := e.st.PendingConfigRequeues(e.ctx)
		return err == nil && !pending
	})
}
