package converge

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// idleRunner is how long a handler goroutine waits for its next task
// before it exits.
const idleRunner = 10 * time.Second

// launch starts handlers the ledger allowed to run, each on an idle
// handler goroutine if one is waiting, else on a new one. Reusing
// goroutines keeps the stacks handlers have grown, instead of growing a
// fresh one for every task.
func (w *Worker) launch(exs []*execution) {
	for _, ex := range exs {
		select {
		case w.idle <- ex:
		default:
			go w.runner(ex)
		}
	}
}

// runner runs ex, then whatever launch hands it, until it has been idle
// for idleRunner or Run has returned.
func (w *Worker) runner(ex *execution) {
	timer := time.NewTimer(idleRunner)
	defer timer.Stop()
	for {
		w.execute(ex)
		timer.Reset(idleRunner)
		select {
		case ex = <-w.idle:
		case <-timer.C:
			return
		case <-w.quit:
			return
		}
	}
}

// execute runs one handler and records its result. A panic, in the
// handler or in middleware, is reported as [PanicError] says; a handler
// that ends its goroutine without returning (runtime.Goexit) as a
// transient failure. The worker goes on either way (a Goexit ends that
// handler goroutine, and later tasks start on others).
func (w *Worker) execute(ex *execution) {
	t := newTask(ex.task)
	t.events = func(e Event) error { return w.ledger.queueEvent(ex, e) }
	var res *Result
	var err error
	returned := false
	defer func() {
		if !returned {
			res, err = nil, fmt.Errorf("converge: handler for kind %q version %d reaction %q exited without returning", t.Kind, t.KindVersion, t.Reaction)
		}
		rep := buildResult(ex.task, res, err)
		if !w.ledger.dropped(ex) {
			w.logFailure(t, rep)
		}
		w.launch(w.ledger.finish(ex, rep))
	}()
	res, err = call(ex.ctx, ex.handler, t, w.logPanic)
	returned = true
}

// logFailure logs a failed task once, where the worker's operator looks
// first, with what identifies the attempt; the server logs it too.
func (w *Worker) logFailure(t *Task, rep *report) {
	f := rep.result.GetError()
	if f == nil {
		return
	}
	level := slog.LevelWarn
	if f.GetTerminal() {
		level = slog.LevelError
	}
	attrs := []any{"kind", t.Kind, "version", t.KindVersion,
		"reaction", t.Reaction, "namespace", t.Namespace, "name", t.Name, "generation", t.Generation,
		"attempt", t.Attempt, "terminal", f.GetTerminal(), "reason", f.GetReason(), "err", f.GetMessage()}
	if id := traceID(t.TraceParent); id != "" {
		attrs = append(attrs, "trace_id", id)
	}
	w.log.Log(context.Background(), level, "converge: task failed", attrs...)
}
