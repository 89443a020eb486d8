package converge

import (
	"context"
	"encoding/json"

	"github.com/convergehq/converge/sdk-go/internal/wire"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func init() {
	wire.DecodeResult = func(r *convergev1.TaskResult, chunks []*convergev1.ComposeChunk) (any, error) {
		return decodeReport(r, chunks, nil)
	}
}

// Outcome is a successful task's result as a worker reports it to the
// server, once encoded and checked: see [CheckResult].
type Outcome struct {
	// Status is the status as encoded (compact JSON); nil leaves the
	// resource's status as it was.
	Status     json.RawMessage
	Unhealthy  bool
	Conditions []Condition

	// Composed reports a composer's answer: Children, Edges and
	// References are then the whole desired set, as encoded (a child's
	// Spec is a json.RawMessage), and Parts counts the messages the
	// composition is sent in (more than 1 for a large one).
	Composed   bool
	Children   []Child
	Edges      []Edge
	References []Ref
	Parts      int

	// Output is an operation's output as encoded; nil for none.
	Output json.RawMessage
}

// CheckResult returns what a worker reports to the server when a handler
// returns res and err for task t: it runs the same encoding and checks as
// the worker, so a unit test sees the failure a live worker would report.
// When the report is a failure (err, or a result that breaks a rule, e.g. a
// child with an invalid name), CheckResult returns it as an error whose
// message is the reported message, terminal ([IsTerminal]) when the report
// is, and wrapping err; otherwise it returns the [Outcome].
//
// Only the worker's checks run. The server checks more once it has the
// result: the status against the kind's status_schema, the parts of the
// result against the reaction's emits, and edges for cycles and unknown
// resources.
func CheckResult(t *Task, res *Result, err error) (*Outcome, error) {
	rep := buildResult(wireTaskOf(t), res, err)
	return decodeReport(rep.result, rep.chunks, err)
}

// RunHandler runs h on t as a worker does, without a server, and returns
// what the worker would report, as [CheckResult] does. The handler's
// context is ctx with t.Deadline, when set; a panic is recovered as
// [PanicError] says, for attempt t.Attempt. h runs on the calling
// goroutine, so a handler that calls runtime.Goexit (or testing's
// t.FailNow) ends the caller's goroutine.
func RunHandler(ctx context.Context, h HandlerFunc, t *Task) (*Outcome, error) {
	if t == nil {
		t = &Task{}
	}
	if !t.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, t.Deadline)
		defer cancel()
	}
	res, err := call(ctx, h, t, nil)
	return CheckResult(t, res, err)
}

// wireTaskOf is what buildResult reads of the wire task t came from: its
// lease (a stand-in: a test's task has none), trigger and the kind of work.
func wireTaskOf(t *Task) *convergev1.Task {
	if t == nil {
		t = &Task{}
	}
	m := &convergev1.Task{
		Lease:       &convergev1.Lease{TaskId: 1, Epoch: 1, Generation: max(t.Generation, 0)},
		Kind:        t.Kind,
		KindVersion: clampInt32(t.KindVersion),
		Reaction:    t.Reaction,
		Trigger:     t.Trigger,
	}
	if t.Operation != nil {
		m.Operation = &convergev1.OperationTask{Id: t.Operation.ID, Verb: t.Operation.Verb, Input: t.Operation.Input}
	}
	if t.Reactor != nil {
		m.Reactor = &convergev1.ReactorTask{Binding: t.Reactor.Binding, Transition: t.Reactor.Transition}
	}
	return m
}

// reportedError is a failure as reported: its message is the one sent,
// and it wraps the handler's error when the failure is the handler's.
type reportedError struct {
	msg   string
	cause error
}

func (e *reportedError) Error() string { return e.msg }
func (e *reportedError) Unwrap() error { return e.cause }

// decodeReport reads a result and the chunks sent before it back into an
// Outcome, or the failure it reports, wrapping cause.
func decodeReport(r *convergev1.TaskResult, chunks []*convergev1.ComposeChunk, cause error) (*Outcome, error) {
	if f := r.GetError(); f != nil {
		var err error = &reportedError{msg: f.GetMessage(), cause: cause}
		if f.GetTerminal() && !IsTerminal(err) {
			err = Terminal(err)
		}
		return nil, err
	}
	s := r.GetSuccess()
	out := &Outcome{
		Status:    rawOrNil(s.GetStatus()),
		Unhealthy: s.GetUnhealthy(),
		Output:    rawOrNil(s.GetOperationOutput()),
	}
	for _, c := range s.GetConditions() {
		out.Conditions = append(out.Conditions, Condition{Type: c.GetType(), Status: ConditionStatus(c.GetStatus()),
			Reason: c.GetReason(), Message: c.GetMessage()})
	}
	if s.GetComposition() == nil {
		return out, nil
	}
	out.Composed = true
	parts := make([]*convergev1.Composition, 0, len(chunks)+1)
	for _, c := range chunks {
		parts = append(parts, c.GetPart())
	}
	parts = append(parts, s.GetComposition())
	out.Parts = len(parts)
	for _, p := range parts {
		for _, c := range p.GetChildren() {
			out.Children = append(out.Children, Child{Kind: c.GetKind(), KindVersion: int(c.GetKindVersion()),
				Name: c.GetName(), Labels: c.GetLabels(), Spec: json.RawMessage(c.GetSpec())})
		}
		for _, e := range p.GetEdges() {
			edge := Edge{Dependent: refOf(e.GetDependent()), Dependency: refOf(e.GetDependency())}
			for _, f := range e.GetFlows() {
				edge.Flows = append(edge.Flows, Flow{From: f.GetFrom(), Expr: f.GetExpr(), To: f.GetTo()})
			}
			out.Edges = append(out.Edges, edge)
		}
		for _, ref := range p.GetReferences() {
			out.References = append(out.References, refOf(ref))
		}
	}
	return out, nil
}

func rawOrNil(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}
