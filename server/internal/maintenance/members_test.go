package maintenance

import (
	"slices"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/testkit"
)

// TestMemberForgetter: the row of a member silent for ForgetAfter goes; a
// heartbeating member's stays.
func TestMemberForgetter(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("m-dead", "m-live")
	f := NewMemberForgetter(tick, e.st, quiet)
	f.after = 300 * time.Millisecond
	e.run(f)

	ids := func() []string {
		all, err := e.st.LiveMembers(e.ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range all {
			out = append(out, m.ID)
		}
		return out
	}
	testkit.Eventually(t, "m-dead to be forgotten", func() bool {
		e.heartbeat("m-live")
		return !slices.Contains(ids(), "m-dead")
	})
	if got := ids(); !slices.Equal(got, []string{"m-live"}) {
		t.Fatalf("members = %v; want m-live alone", got)
	}
}
