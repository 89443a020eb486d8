package conctl

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// printRollout prints a rollout: as data with -o json|yaml, else a
// header line (with what was just done to it), its waves and failures.
func (a *app) printRollout(r *convergev1.Rollout, done string) error {
	if a.machine() {
		return a.printMessages([]proto.Message{r}, true)
	}
	what := fmt.Sprintf("%s v%d -> v%d", r.GetKind(), r.GetFromVersion(), r.GetToVersion())
	if r.GetMode() == "recompose" {
		what = fmt.Sprintf("%s v%d recompose", r.GetKind(), r.GetToVersion())
	}
	head := fmt.Sprintf("rollout %d: %s, %s", r.GetId(), what, r.GetState())
	if done != "" {
		head = fmt.Sprintf("rollout %d %s%s: %s, %s", r.GetId(), done, a.dryRunMark(), what, r.GetState())
	}
	c := r.GetCounts()
	head += fmt.Sprintf(", %d of %d ready, %d failed", c.GetReady(), c.GetTotal(), c.GetFailed())
	if r.GetReason() != "" {
		head += ": " + r.GetReason()
	}
	fmt.Fprintln(a.stdout, head)
	t := newTable(a.stdout, "WAVE", "SELECTOR", "STATE", "TOTAL", "PENDING", "MOVING", "READY", "FAILED", "SKIPPED", "ROLLED-BACK")
	for _, w := range r.GetWaves() {
		wc := w.GetCounts()
		t.row(fmt.Sprint(w.GetIndex()), w.GetSelector(), w.GetState(), fmt.Sprint(wc.GetTotal()), fmt.Sprint(wc.GetPending()),
			fmt.Sprint(wc.GetMoving()), fmt.Sprint(wc.GetReady()), fmt.Sprint(wc.GetFailed()), fmt.Sprint(wc.GetSkipped()),
			fmt.Sprint(wc.GetRolledBack()))
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, f := range r.GetFailures() {
		fmt.Fprintf(a.stdout, "  wave %d failed: %s\n", f.GetWave(), f.GetReason())
	}
	return nil
}

// rolloutSummary is what --watch compares to tell a change.
func rolloutSummary(r *convergev1.Rollout) string {
	s := r.GetState() + r.GetReason()
	for _, w := range r.GetWaves() {
		s += fmt.Sprintf("|%s %v", w.GetState(), w.GetCounts())
	}
	return s
}

func waveText(r *convergev1.Rollout) string {
	if r.GetCurrentWave() == 0 {
		return fmt.Sprintf("-/%d", len(r.GetWaves()))
	}
	return fmt.Sprintf("%d/%d", r.GetCurrentWave(), len(r.GetWaves()))
}
