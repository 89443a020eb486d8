//go:build unix

package e2e

import (
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// recordsChecked is how many of a resource's last handler runs
// checkRecords compares with its task records (the server keeps 20).
const recordsChecked = 3

// checkRecords: the last runs of every resource left at the end have
// task records that say what the handler did: the same trigger,
// generation and attempt, and for a failure its terminal flag and reason.
// Runs near a fault are left out: a killed server loses the records it
// had not written yet.
func (w *world) checkRecords(t tb) {
	t.Helper()
	runs := w.rec.recordable(recordsChecked, time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for key, r := range w.listAll(t) {
		want := runs[r.GetUid()]
		if len(want) == 0 {
			continue
		}
		for {
			missing := w.unrecorded(t, r, want)
			if len(missing) == 0 {
				break
			}
			if time.Now().After(deadline) {
				w.logBoth(t, "task records of %s lack these runs:\n  %s\n%s", key, strings.Join(missing, "\n  "), w.report(w.listAll(t)))
				t.Fatalf("invariant broken: a handler run has no true task record")
			}
			time.Sleep(finalPoll)
		}
	}
}

// unrecorded lists the runs of want that r's records do not show truly.
func (w *world) unrecorded(t tb, r *convergev1.Resource, want []invocation) []string {
	resp := mustCall(t, "task records of "+r.GetKind()+"/"+r.GetName(), w.api.ListTaskRecords,
		&convergev1.ListTaskRecordsRequest{Kind: r.GetKind(), Name: r.GetName(), PageSize: 100})
	var missing []string
	for _, inv := range want {
		failed := inv.outcome == "transient" || inv.outcome == "terminal"
		var seen []string
		ok := false
		for _, rec := range resp.GetRecords() {
			// An operation's record names its verb ("operation:ping"); the
			// worker is told "operation".
			trig := rec.GetTrigger() == inv.trigger || strings.HasPrefix(rec.GetTrigger(), inv.trigger+":")
			if !trig || rec.GetGeneration() != inv.gen || int(rec.GetAttempt()) != inv.attempt {
				continue
			}
			// A run may have two records: the lease ran out (lost) and
			// its result came late (discarded). One must say what the
			// handler said.
			seen = append(seen, fmt.Sprintf("%s failed=%v terminal=%v reason=%q error=%q discard=%q", rec.GetOutcome(),
				rec.GetFailed(), rec.GetTerminal(), rec.GetErrorReason(), rec.GetError(), rec.GetDiscardReason()))
			if !failed || rec.GetFailed() && rec.GetTerminal() == (inv.outcome == "terminal") && rec.GetErrorReason() == inv.reason {
				ok = true
			}
		}
		switch {
		case len(seen) == 0:
			missing = append(missing, fmt.Sprintf("no record of %s", &inv))
		case !ok:
			missing = append(missing, fmt.Sprintf("%s (reason %q): records %s", &inv, inv.reason, strings.Join(seen, "; ")))
		}
	}
	// The newest record reads whole: its stored parts assemble into the
	// documents, whatever the features that made it. One pruned meanwhile
	// is not a failure.
	if recs := resp.GetRecords(); len(recs) > 0 {
		whole, err := call(t, "task record", w.api.GetTaskRecord, &convergev1.GetTaskRecordRequest{Id: recs[0].GetId()})
		switch {
		case connect.CodeOf(err) == connect.CodeNotFound:
		case err != nil:
			missing = append(missing, err.Error())
		case whole.GetRecord().GetInput().GetFields()["kind"].GetStringValue() != r.GetKind():
			missing = append(missing, fmt.Sprintf("record %d reads as input %v: no kind %s", recs[0].GetId(),
				whole.GetRecord().GetInput(), r.GetKind()))
		}
	}
	return missing
}
