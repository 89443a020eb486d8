package convergetest

import (
	"sync"

	"github.com/convergehq/converge/sdk-go/converge"
)

// recorders holds the events of the tasks [NewTask] built, by task. A
// task is small and lives as long as its test, so they are not removed.
var recorders sync.Map // *converge.Task -> *recorder

type recorder struct {
	mu     sync.Mutex
	events []converge.Event
}

func (r *recorder) add(e converge.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// recording returns task with a recorder of its own.
func recording(task *converge.Task) *converge.Task {
	r := &recorder{}
	task = task.WithEventRecorder(r.add)
	recorders.Store(task, r)
	return task
}

// Events returns the events a handler recorded with [converge.Task.Event]
// on task, which [NewTask] built, oldest first, as the worker would have
// sent them (a preview's record nothing). It returns nil for a task
// NewTask did not build. A task run by a worker against a [Server]
// reports its events in [Report.Events] instead.
func Events(task *converge.Task) []converge.Event {
	v, ok := recorders.Load(task)
	if !ok {
		return nil
	}
	r := v.(*recorder)
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]converge.Event(nil), r.events...)
}
