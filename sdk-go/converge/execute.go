package converge

import (
	"fmt"
	"runtime/debug"
)

// launch starts handlers the ledger allowed to run.
func (w *Worker) launch(exs []*execution) {
	for _, ex := range exs {
		go w.execute(ex)
	}
}

// execute runs one handler and records its result. A panic, or a handler
// that ends its goroutine without returning (runtime.Goexit), is reported as
// a transient failure; the worker goes on either way.
func (w *Worker) execute(ex *execution) {
	t := newTask(ex.task)
	var res *Result
	err := fmt.Errorf("converge: handler for kind %q version %d reaction %q exited without returning", t.Kind, t.KindVersion, t.Reaction)
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("converge: handler panicked", "kind", t.Kind, "version", t.KindVersion,
				"reaction", t.Reaction, "namespace", t.Namespace, "name", t.Name, "panic", v, "stack", string(debug.Stack()))
			res, err = nil, fmt.Errorf("converge: handler for kind %q version %d reaction %q panicked: %v", t.Kind, t.KindVersion, t.Reaction, v)
		}
		w.launch(w.ledger.finish(ex, buildResult(ex.task, res, err)))
	}()
	res, err = ex.handler(ex.ctx, t)
}
