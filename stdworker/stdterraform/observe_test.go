package stdterraform

import (
	"os"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
)

// TestGeneratedObserve: an observed generated kind imports the existing
// object named by the task's import id with terraform import, reports it
// from a refresh-only plan without ever converging it on the spec, and a
// later full reconcile (the resource promoted) does converge it.
func TestGeneratedObserve(t *testing.T) {
	h := genHandler(t, "time_static", "", "rfc3339", "unix")
	const id = "2020-02-12T06:36:13Z"
	// The spec asks for another time: observing must not apply it.
	spec := map[string]any{"rfc3339": "2030-01-01T00:00:00Z"}
	tk := task(t, "obs", spec, nil)
	tk.Trigger, tk.ImportID = converge.TriggerObserve, id
	res, err := h.genObserve(testCtx(t), tk)
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	if st := genStatusOf(t, res); st["unix"] != float64(1581489373) || st["rfc3339"] != id {
		t.Fatalf("observed status %v: want the imported object as it is (unix 1581489373)", st)
	}
	if c := condition(res, condObserved); c.Type != condObserved {
		t.Fatalf("conditions %+v: want %s", res.Conditions, condObserved)
	}
	l, _ := resourceLayout(h.root+"/resources", "default", "std.terraform", "obs")
	state, err := os.ReadFile(l.stateFile())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(state), "2030-01-01") {
		t.Fatalf("observing applied the spec; the state is:\n%s", state)
	}

	// Observed again: the state holds it, so nothing is imported, and the
	// refresh-only plan finds nothing changed.
	res, err = h.genObserve(testCtx(t), tk)
	if err != nil {
		t.Fatalf("second observe: %v", err)
	}
	if c := condition(res, condObserved); c.Status != converge.ConditionFalse || c.Reason != "NoChange" {
		t.Errorf("second observe %+v: want %s False, NoChange", c, condObserved)
	}

	// Promoted to full: the reconcile converges the adopted object on the spec.
	full := task(t, "obs", spec, nil)
	full.Trigger, full.ImportID = "specChange", id
	res, err = h.genApply(false)(testCtx(t), full)
	if err != nil {
		t.Fatalf("apply after the promotion: %v", err)
	}
	if st := genStatusOf(t, res); st["rfc3339"] != "2030-01-01T00:00:00Z" {
		t.Errorf("status after the promotion %v: want the spec's rfc3339", st)
	}

	// Nothing to import and nothing in the state: a terminal failure.
	none := task(t, "empty", spec, nil)
	none.Trigger = converge.TriggerObserve
	if _, err := h.genObserve(testCtx(t), none); !converge.IsTerminal(err) || !strings.Contains(err.Error(), "nothing to observe") {
		t.Errorf("observing with no import id: %v; want a terminal failure saying there is nothing to observe", err)
	}
}
