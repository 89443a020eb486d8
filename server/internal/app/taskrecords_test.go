package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/taskrec"
	"github.com/convergehq/converge/server/internal/testkit"
)

// A result the fence discards (the spec changed while the task ran) is
// recorded as discarded, Superseded, with what the worker was sent; the
// run at the new generation is recorded applied; a resource keeps its
// last Keep records.
func TestTaskRecordsApplyAndDiscard(t *testing.T) {
	base, _, ctl := serverWith(t, func(c *app.Config) { c.TaskRecords = taskrec.Config{Keep: 2} })
	applyGreeting(t, ctl)
	w, err := converge.NewWorker(base, converge.WithLogger(slog.New(slog.DiscardHandler)), converge.WithName("rec-worker"))
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	w.Handle("greeting", 1, "reconcile", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
		if task.Generation == 1 {
			close(started)
			<-release
		}
		return nil, nil
	})
	runWorker(t, w)
	applyResource(t, ctl, "rec", map[string]any{"name": "one"})
	<-started
	applyResource(t, ctl, "rec", map[string]any{"name": "two"})
	close(release)
	list := func() []*convergev1.TaskRecord {
		resp, err := ctl.ListTaskRecords(context.Background(), &convergev1.ListTaskRecordsRequest{Kind: "greeting", Name: "rec"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetRecords()
	}
	recs := testkit.Poll(t, "two task records", list, func(rs []*convergev1.TaskRecord) bool { return len(rs) == 2 })
	applied, discarded := recs[0], recs[1]
	if applied.GetGeneration() != 2 || applied.GetOutcome() != "applied" || applied.GetWorker() != "rec-worker" ||
		applied.GetSession() == "" || applied.GetDispatchedAt() == nil || applied.GetInput() != nil {
		t.Errorf("newest record = %v; want generation 2 applied by rec-worker, dispatched, listed without input", applied)
	}
	if discarded.GetGeneration() != 1 || discarded.GetOutcome() != "discarded" ||
		!strings.HasPrefix(discarded.GetDiscardReason(), "Superseded: ") {
		t.Errorf("older record = %v; want generation 1 discarded as Superseded", discarded)
	}
	whole, err := ctl.GetTaskRecord(context.Background(), &convergev1.GetTaskRecordRequest{Id: discarded.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	spec := whole.GetRecord().GetInput().GetFields()["spec"].GetStructValue()
	if spec.GetFields()["name"].GetStringValue() != "one" {
		t.Errorf("the discarded record's input = %v; want the spec it was sent, name one", whole.GetRecord().GetInput())
	}

	applyResource(t, ctl, "rec", map[string]any{"name": "three"})
	recs = testkit.Poll(t, "the generation 3 record, the oldest pruned", list, func(rs []*convergev1.TaskRecord) bool {
		return len(rs) == 2 && rs[0].GetGeneration() == 3 && rs[1].GetGeneration() == 2
	})
	if _, err := ctl.GetTaskRecord(context.Background(), &convergev1.GetTaskRecordRequest{Id: discarded.GetId()}); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Errorf("GetTaskRecord of a pruned record: %v; want not found", err)
	}
}
