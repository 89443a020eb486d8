package convergetest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
)

// warnFirst reports a Warning before composing, as a handler about to do
// something drastic does.
func warnFirst(ctx context.Context, task *converge.Task) (*converge.Result, error) {
	if err := task.Event(ctx, converge.EventWarning, "Replacing", "replacing "+task.Name); err != nil {
		return nil, err
	}
	return &converge.Result{Compose: true}, nil
}

// TestEventsAreRecorded: a unit test sees the events a handler recorded,
// as a test against the in-process server does; a preview records none.
func TestEventsAreRecorded(t *testing.T) {
	zone := convergetest.ReadManifests(t, "testdata/kinds.json").Get(t, "zone", 2)
	want := []converge.Event{{Type: converge.EventWarning, Reason: "Replacing", Message: "replacing test"}}

	task := convergetest.NewTask(t, zone, "compose", `{"size":1}`)
	if _, err := convergetest.Run(t, warnFirst, task); err != nil {
		t.Fatal(err)
	}
	if got := convergetest.Events(task); !slices.Equal(got, want) {
		t.Errorf("unit test: events %v; want %v", got, want)
	}
	preview := convergetest.NewTask(t, zone, "compose", `{"size":1}`, convergetest.AsPreview())
	if _, err := convergetest.Run(t, warnFirst, preview); err != nil {
		t.Fatal(err)
	}
	if got := convergetest.Events(preview); len(got) != 0 {
		t.Errorf("a preview recorded events %v; want none", got)
	}

	srv := convergetest.NewServer(t)
	w := convergetest.NewWorker(t, srv)
	w.Handle("zone", 2, "compose", warnFirst)
	convergetest.RunWorker(t, w)
	srv.Send(task, preview)
	if r := srv.ResultFor(t.Context(), task); !slices.Equal(r.Events, want) {
		t.Errorf("worker: events %v; want %v", r.Events, want)
	}
	if r := srv.ResultFor(t.Context(), preview); len(r.Events) != 0 {
		t.Errorf("worker: a preview sent events %v; want none", r.Events)
	}
}
