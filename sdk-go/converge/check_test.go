package converge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestCheckResultFailsAsTheWorkerReports: for results the worker refuses
// and for handler errors, CheckResult's error is the very failure a worker
// reports over the stream: same message, same terminality.
func TestCheckResultFailsAsTheWorkerReports(t *testing.T) {
	cases := []struct {
		name string
		res  *Result
		err  error
	}{
		{"bad child name", &Result{Compose: true, Children: []Child{{Kind: "vpc", KindVersion: 1, Name: "Bad_Name"}}}, nil},
		{"edge to itself", &Result{Compose: true, Children: []Child{{Kind: "vpc", KindVersion: 1, Name: "a"}},
			Edges: []Edge{DependsOn(RefTo("vpc", "a"), RefTo("vpc", "a"))}}, nil},
		{"array status", &Result{Status: []int{1}}, nil},
		{"output without an operation", &Result{Output: map[string]int{"n": 1}}, nil},
		{"transient error", nil, fmt.Errorf("try later: %w", io.ErrUnexpectedEOF)},
		{"terminal error", nil, Terminal(errors.New("no such region"))},
		{"long error", nil, errors.New(strings.Repeat("x", maxErrorBytes+10))},
	}
	f := newFakeServer(t)
	w := newTestWorker(f)
	for _, c := range cases {
		w.Handle("greeting", 1, c.name, func(context.Context, *Task) (*Result, error) { return c.res, c.err })
	}
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wire := greetingTask(int64(i+1), `{}`)
			wire.Reaction = c.name
			s.task(t, wire)
			sent := s.result(t).GetError()
			if sent == nil {
				t.Fatal("the worker reported a success")
			}
			_, err := CheckResult(newTask(wire), c.res, c.err)
			if err == nil || err.Error() != sent.GetMessage() || IsTerminal(err) != sent.GetTerminal() {
				t.Fatalf("CheckResult error = %.200v (terminal %v); the worker sent %.200q (terminal %v)",
					err, IsTerminal(err), sent.GetMessage(), sent.GetTerminal())
			}
			if c.err != nil && !errors.Is(err, c.err) {
				t.Errorf("the error does not wrap the handler's")
			}
		})
	}
}

// TestCheckResultReadsBackTheEncodedResult: a success comes back as
// encoded, a large composition whole and in order, with its part count.
func TestCheckResultReadsBackTheEncodedResult(t *testing.T) {
	res := &Result{
		Status:     map[string]any{"b": 2, "a": "x"},
		Unhealthy:  true,
		Conditions: []Condition{{Type: "Ready", Status: ConditionFalse, Reason: "Waiting", Message: "m"}},
		Compose:    true,
		References: []Ref{{Namespace: "shared", Kind: "dns.zone", Name: "root"}},
	}
	for i := range 3000 {
		res.Children = append(res.Children, Child{Kind: "vpc", KindVersion: 1, Name: fmt.Sprintf("vpc-%d", i),
			Labels: map[string]string{"i": fmt.Sprint(i)}, Spec: map[string]int{"i": i}})
	}
	res.Edges = []Edge{DependsOn(RefTo("vpc", "vpc-1"), RefTo("vpc", "vpc-0"), FlowFrom("/id", "/peer"), FlowExpr(`status.id + "x"`, "/x"))}
	out, err := CheckResult(&Task{Kind: "zone", KindVersion: 1, Trigger: "specChange", Generation: 2}, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Status) != `{"a":"x","b":2}` || !out.Unhealthy || len(out.Conditions) != 1 || out.Conditions[0] != res.Conditions[0] {
		t.Errorf("outcome = %s %v %v", out.Status, out.Unhealthy, out.Conditions)
	}
	if !out.Composed || out.Parts < 2 || len(out.Children) != 3000 {
		t.Fatalf("composition: composed %v, %d parts, %d children; want 3000 children in parts", out.Composed, out.Parts, len(out.Children))
	}
	for i, c := range out.Children {
		if c.Name != fmt.Sprintf("vpc-%d", i) || string(c.Spec.(json.RawMessage)) != fmt.Sprintf(`{"i":%d}`, i) || c.Labels["i"] != fmt.Sprint(i) {
			t.Fatalf("children[%d] = %+v", i, c)
		}
	}
	if len(out.Edges) != 1 || len(out.Edges[0].Flows) != 2 || out.Edges[0].Flows[1].Expr != `status.id + "x"` ||
		out.Edges[0].Dependency != RefTo("vpc", "vpc-0") {
		t.Errorf("edges = %+v", out.Edges)
	}
	if len(out.References) != 1 || out.References[0] != res.References[0] {
		t.Errorf("references = %+v", out.References)
	}

	out, err = CheckResult(&Task{Trigger: "operation", Operation: &Operation{ID: "op", Verb: "restart"}},
		&Result{Output: map[string]bool{"ok": true}}, nil)
	if err != nil || string(out.Output) != `{"ok":true}` || out.Composed {
		t.Errorf("operation: %+v, %v", out, err)
	}
	_, err = CheckResult(&Task{Trigger: "reactor", Reactor: &ReactorEvent{Binding: "b"}}, &Result{Status: map[string]int{"n": 1}}, nil)
	if err == nil || !IsTerminal(err) || !strings.Contains(err.Error(), "a reactor emits side effects only") {
		t.Errorf("reactor with a status: %v", err)
	}
	if out, err := CheckResult(nil, nil, nil); err != nil || out.Composed || out.Status != nil {
		t.Errorf("nil task and result: %+v, %v", out, err)
	}
}

// TestRunHandlerAppliesTheDeadline: the handler's context carries the
// task's deadline, as on a worker.
func TestRunHandlerAppliesTheDeadline(t *testing.T) {
	task := newTask(greetingTask(1, `{}`))
	_, err := RunHandler(context.Background(), func(ctx context.Context, got *Task) (*Result, error) {
		if d, ok := ctx.Deadline(); !ok || !d.Equal(got.Deadline) {
			return nil, fmt.Errorf("deadline %v %v; want %v", d, ok, got.Deadline)
		}
		return nil, nil
	}, task)
	if err != nil {
		t.Fatal(err)
	}
}
