package converge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// operationTask is a task running verb backup of kind db v1.
func operationTask(id int64, reaction, input string) *convergev1.Task {
	t := greetingTask(id, `{}`)
	t.Kind, t.Reaction, t.Trigger = "db", reaction, "operation"
	t.Operation = &convergev1.OperationTask{Id: "op-7", Verb: "backup", Input: []byte(input)}
	return t
}

// reactorTask is a task for the reactor kind notifier v1.
func reactorTask(id int64, reaction string) *convergev1.Task {
	t := greetingTask(id, `{}`)
	t.Kind, t.Reaction, t.Trigger = "notifier", reaction, "reactor"
	t.Reactor = &convergev1.ReactorTask{
		Binding:            "page-on-failure",
		Transition:         "failed",
		Watched:            &convergev1.ResourceRef{Namespace: "team-a", Kind: "db", Name: "orders"},
		WatchedKindVersion: 2,
		WatchedGeneration:  5,
		WatchedPhase:       "Failed",
		WatchedStatus:      []byte(`{"error":"disk full"}`),
	}
	return t
}

// outcome renders a result for comparison: "ok status=... output=..." or
// "error terminal=...: message".
func outcome(r *convergev1.TaskResult) string {
	if e := r.GetError(); e != nil {
		return fmt.Sprintf("error terminal=%t: %s", e.GetTerminal(), e.GetMessage())
	}
	s := r.GetSuccess()
	return fmt.Sprintf("ok status=%s output=%s", s.GetStatus(), s.GetOperationOutput())
}

func TestOperationResults(t *testing.T) {
	type backupInput struct {
		Target string `json:"target"`
	}
	cases := []struct {
		name    string
		task    func(id int64, reaction string) *convergev1.Task
		handler HandlerFunc
		want    string // a prefix of the outcome
	}{
		{"output", func(id int64, r string) *convergev1.Task { return operationTask(id, r, `{"target":"s3://b"}`) },
			func(_ context.Context, task *Task) (*Result, error) {
				var in backupInput
				if err := task.Operation.DecodeInput(&in); err != nil {
					return nil, Terminal(err)
				}
				return &Result{Output: map[string]any{
					"seen": fmt.Sprintf("%s %s %s %s", task.Operation.ID, task.Operation.Verb, in.Target, task.Trigger),
				}}, nil
			}, `ok status= output={"seen":"op-7 backup s3://b operation"}`},
		{"output-and-status", func(id int64, r string) *convergev1.Task { return operationTask(id, r, ``) },
			func(context.Context, *Task) (*Result, error) {
				return &Result{Status: map[string]int{"backups": 1}, Output: json.RawMessage(`{ "id" : "b-1" }`)}, nil
			}, `ok status={"backups":1} output={"id":"b-1"}`},
		{"no-output", func(id int64, r string) *convergev1.Task { return operationTask(id, r, ``) },
			nop, `ok status= output=`},
		{"array-output", func(id int64, r string) *convergev1.Task { return operationTask(id, r, ``) },
			func(context.Context, *Task) (*Result, error) { return &Result{Output: []string{"x"}}, nil },
			`error terminal=true: converge: result output: must be a JSON object, got an array`},
		{"string-output", func(id int64, r string) *convergev1.Task { return operationTask(id, r, ``) },
			func(context.Context, *Task) (*Result, error) { return &Result{Output: "done"}, nil },
			`error terminal=true: converge: result output: must be a JSON object, got a string`},
		{"huge-output", func(id int64, r string) *convergev1.Task { return operationTask(id, r, ``) },
			func(context.Context, *Task) (*Result, error) {
				return &Result{Output: map[string]string{"blob": strings.Repeat("x", maxOutputBytes)}}, nil
			}, `error terminal=true: converge: result output: 524299 bytes encoded, more than the limit of 524288`},
		{"bad-input", func(id int64, r string) *convergev1.Task { return operationTask(id, r, `{"target":1}`) },
			func(_ context.Context, task *Task) (*Result, error) {
				var in backupInput
				return nil, Terminal(task.Operation.DecodeInput(&in))
			}, `error terminal=true: converge: decode input of operation op-7 (verb "backup"): input.target: want string, got number`},
		{"transient", func(id int64, r string) *convergev1.Task { return operationTask(id, r, ``) },
			func(context.Context, *Task) (*Result, error) { return nil, errors.New("snapshot busy") },
			`error terminal=false: snapshot busy`},
		{"output-without-operation", func(id int64, r string) *convergev1.Task {
			t := greetingTask(id, `{}`)
			t.Kind, t.Reaction = "db", r
			return t
		}, func(context.Context, *Task) (*Result, error) { return &Result{Output: map[string]any{"a": 1}}, nil },
			`error terminal=true: converge: result output: set for a task that runs no operation (trigger "specChange")`},
		{"reactor", reactorTask, func(_ context.Context, task *Task) (*Result, error) {
			e := task.Reactor
			var st struct{ Error string }
			if err := e.DecodeWatchedStatus(&st); err != nil {
				return nil, Terminal(err)
			}
			if got := fmt.Sprintf("%s %s %s %d %d %s %s %s", e.Binding, e.Transition, describeRef(e.Watched), e.WatchedKindVersion,
				e.WatchedGeneration, e.WatchedPhase, st.Error, task.DedupToken); got != `page-on-failure failed db "team-a/orders" 2 5 Failed disk full dedup` {
				return nil, Terminal(errors.New("reactor event: " + got))
			}
			return nil, nil
		}, `ok status= output=`},
		{"reactor-empty-result", reactorTask, func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]any(nil)}, nil
		}, `ok status= output=`},
		{"reactor-with-status", reactorTask, func(context.Context, *Task) (*Result, error) {
			return &Result{Status: map[string]any{"paged": true}, Conditions: []Condition{{Type: "Paged", Status: ConditionTrue}}}, nil
		}, `error terminal=true: converge: result of a reactor task carries status, conditions: a reactor emits side effects only; return a nil Result`},
		{"reactor-composing", reactorTask, func(context.Context, *Task) (*Result, error) {
			return &Result{Compose: true}, nil
		}, `error terminal=true: converge: result of a reactor task carries a composition:`},
		{"reactor-failure", reactorTask, func(context.Context, *Task) (*Result, error) {
			return nil, errors.New("pager unreachable")
		}, `error terminal=false: pager unreachable`},
	}

	f := newFakeServer(t)
	w := newTestWorker(f)
	for _, c := range cases {
		kind := "db"
		if c.task(1, c.name).GetReactor() != nil {
			kind = "notifier"
		}
		w.Handle(kind, 1, c.name, c.handler)
	}
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := int64(i + 1)
			s.task(t, c.task(id, c.name))
			r := s.result(t)
			if r.GetLease().GetTaskId() != id {
				t.Fatalf("result lease = %v; want task %d", r.GetLease(), id)
			}
			if got := outcome(r); !strings.HasPrefix(got, c.want) {
				t.Errorf("outcome = %s;\nwant prefix %s", got, c.want)
			}
			s.ack(t, r.GetLease())
		})
	}
}

func TestTaskOperationAndReactorConversion(t *testing.T) {
	task := newTask(operationTask(1, "backup", `{"target":"x"}`))
	if want := (&Operation{ID: "op-7", Verb: "backup", Input: json.RawMessage(`{"target":"x"}`)}); !reflect.DeepEqual(task.Operation, want) {
		t.Errorf("Operation = %+v; want %+v", task.Operation, want)
	}
	if task.Reactor != nil {
		t.Errorf("an operation task has a Reactor: %+v", task.Reactor)
	}

	task = newTask(reactorTask(1, "page"))
	want := &ReactorEvent{
		Binding:            "page-on-failure",
		Transition:         TransitionFailed,
		Watched:            Ref{Namespace: "team-a", Kind: "db", Name: "orders"},
		WatchedKindVersion: 2,
		WatchedGeneration:  5,
		WatchedPhase:       "Failed",
		WatchedStatus:      json.RawMessage(`{"error":"disk full"}`),
	}
	if !reflect.DeepEqual(task.Reactor, want) {
		t.Errorf("Reactor = %+v;\nwant %+v", task.Reactor, want)
	}
	if task.Operation != nil || task.Rollup != nil {
		t.Errorf("a reactor task has an Operation or a Rollup: %+v %+v", task.Operation, task.Rollup)
	}

	// Empty documents leave the target unchanged; a mistyped one is named.
	v := map[string]any{"kept": true}
	if err := (&Operation{}).DecodeInput(&v); err != nil || v["kept"] != true {
		t.Errorf("DecodeInput of no input = %v, %v", err, v)
	}
	if err := (&ReactorEvent{}).DecodeWatchedStatus(&v); err != nil || v["kept"] != true {
		t.Errorf("DecodeWatchedStatus of no status = %v, %v", err, v)
	}
	var n int
	err := want.DecodeWatchedStatus(&n)
	if err == nil || !strings.Contains(err.Error(), `decode watched status of db "team-a/orders" (binding "page-on-failure")`) {
		t.Errorf("DecodeWatchedStatus into an int = %v; want an error naming the watched resource", err)
	}
}
