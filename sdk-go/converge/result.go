package converge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/types/known/durationpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

const (
	// maxErrorBytes bounds the error message reported for a failed task;
	// longer messages are cut, so one verbose handler cannot bloat the stream.
	maxErrorBytes = 32 << 10
	// maxStatusBytes bounds a reported status: the server's status limit
	// (docs/limits.md). A larger one is a terminal failure here rather
	// than at the server, and a status near the server's 4 MiB message
	// limit could otherwise make a message the server refuses, which would
	// break the stream and be re-sent after every reconnect.
	maxStatusBytes = 512 << 10
)

// Result is what a successful handler reports. A reactor (see
// [ReactorEvent]) reports nothing: it returns a nil Result.
type Result struct {
	// Status becomes the resource's status. It must marshal (with
	// encoding/json) to a JSON object: a map, a struct, or a
	// json.RawMessage holding an object, of at most 512 KiB once encoded.
	// Nil, or a value that marshals to null, leaves the status as it was.
	// Anything else is reported as a terminal failure naming the problem.
	// The server validates the status against the kind's status_schema.
	Status any
	// Unhealthy reports that the resource exists but is not healthy; its
	// phase becomes Degraded.
	Unhealthy bool
	// Conditions explain the resource's state; see [Condition].
	Conditions []Condition

	// Compose marks the result as a composer's answer, even when Children
	// is empty: the server makes the composite's children match Children
	// exactly, so an empty set prunes every child. A result with any
	// Children, Edges or References is a composer's answer whether
	// Compose is set or not. A result with neither is a leaf's: it carries
	// no composition, which the server refuses from a reaction that emits
	// children. A composer should therefore always set Compose.
	Compose bool
	// Children is the complete desired set of the composite's children;
	// see [Child]. The server creates, updates and prunes children to
	// match it, in one transaction. Any number of children may be
	// returned: the SDK sends a large set in parts.
	Children []Child
	// Edges are dependencies among the children, and on References, with
	// the value flows along them; see [Edge] and [DependsOn].
	Edges []Edge
	// References are resources outside the composite that edges may name
	// as dependencies. Reading another composite's resources must be
	// declared here.
	References []Ref

	// Output is an operation's output, for an operation reaction (see
	// [Operation]). It must marshal (with encoding/json) to a JSON object
	// of at most 512 KiB once encoded; nil, or a value that marshals to
	// null, reports no output. Anything else, and an Output for a task
	// that runs no operation, is reported as a terminal failure naming the
	// problem.
	Output any
}

// composes reports whether the result is a composer's answer.
func (r *Result) composes() bool {
	return r.Compose || len(r.Children) > 0 || len(r.Edges) > 0 || len(r.References) > 0
}

// Condition is one observation about a resource, e.g. that it is reachable.
// An invalid condition (a Type that is not an identifier, a Status that is
// not one of the ConditionStatus values, an over-long Reason or Message) is
// reported as a terminal failure naming the offending field.
type Condition struct {
	// Type names the condition, e.g. "Reachable": a letter, then letters,
	// digits, '_', '.' or '-'; at most 63 characters.
	Type string
	// Status is ConditionTrue, ConditionFalse or ConditionUnknown.
	Status ConditionStatus
	// Reason is a short machine-readable cause, at most 128 characters.
	Reason string
	// Message is for humans, at most 32768 characters.
	Message string
}

// ConditionStatus is the truth value of a [Condition].
type ConditionStatus string

// The values a [Condition]'s Status may take.
const (
	ConditionTrue    ConditionStatus = "True"
	ConditionFalse   ConditionStatus = "False"
	ConditionUnknown ConditionStatus = "Unknown"
)

// buildResult turns a handler's outcome for task t into what is reported
// to the server. It never fails: a result that cannot be encoded or does
// not meet the protocol's rules becomes a terminal error that says why, so
// a bad result can never poison the stream.
func buildResult(t *convergev1.Task, res *Result, err error) *report {
	lease := t.GetLease()
	if err != nil {
		return failureReport(lease, err)
	}
	failed := func(msg string) *report { return &report{result: errorResult(lease, msg, true)} }
	success := &convergev1.Success{}
	out := &report{result: &convergev1.TaskResult{Lease: lease, Outcome: &convergev1.TaskResult_Success{Success: success}}}
	if res == nil {
		return out
	}
	status, serr := encodeStatus(res.Status)
	if serr != nil {
		return failed("converge: result " + serr.Error())
	}
	success.Status = status
	output, oerr := encodeOutput(t, res.Output)
	if oerr != nil {
		return failed("converge: result " + oerr.Error())
	}
	success.OperationOutput = output
	success.Unhealthy = res.Unhealthy
	for _, c := range res.Conditions {
		success.Conditions = append(success.Conditions, &convergev1.Condition{
			Type:    strings.ToValidUTF8(c.Type, "\uFFFD"),
			Status:  strings.ToValidUTF8(string(c.Status), "\uFFFD"),
			Reason:  strings.ToValidUTF8(c.Reason, "\uFFFD"),
			Message: strings.ToValidUTF8(c.Message, "\uFFFD"),
		})
	}
	if res.composes() {
		comp, cerr := encodeComposition(res)
		if cerr != nil {
			return failed("converge: result " + cerr.Error())
		}
		out.chunks = attachComposition(lease, success, comp)
	}
	if t.GetReactor() != nil {
		if rerr := checkReactorResult(success); rerr != nil {
			return failed("converge: result " + rerr.Error())
		}
	}
	if verr := out.validate(); verr != nil {
		return failed("converge: invalid result: " + verr.Error())
	}
	return out
}

// failureReport reports a handler's error with the reason and retry-after
// attached to it. Those are checked by the protocol's rules here, before
// sending: a bad one makes the failure terminal, saying what is wrong and
// what the handler said, and carries neither.
func failureReport(lease *convergev1.Lease, err error) *report {
	res := errorResult(lease, err.Error(), IsTerminal(err))
	f := res.GetError()
	f.Reason = strings.ToValidUTF8(ReasonOf(err), "\uFFFD")
	if d, ok := RetryAfterOf(err); ok {
		f.RetryAfter = durationpb.New(d)
	}
	if verr := protovalidate.Validate(f); verr != nil {
		return &report{result: errorResult(lease, "converge: invalid failure: "+verr.Error()+"; the handler's error: "+err.Error(), true)}
	}
	return &report{result: res}
}

// errorResult reports a failed task. The message is made valid UTF-8 (the
// wire format requires it) and bounded by maxErrorBytes.
func errorResult(lease *convergev1.Lease, msg string, terminal bool) *convergev1.TaskResult {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) > maxErrorBytes {
		msg = strings.ToValidUTF8(msg[:maxErrorBytes], "") + " …(truncated)"
	}
	return &convergev1.TaskResult{
		Lease:   lease,
		Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{Message: msg, Terminal: terminal}},
	}
}

// encodeStatus marshals a handler's status; nil bytes leave the resource's
// status unchanged.
func encodeStatus(v any) ([]byte, error) {
	b, err := encodeObject(v, maxStatusBytes)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	return b, nil
}

// encodeObject marshals v, which must encode to a JSON object of at most
// limit bytes. Nil, or a value that encodes to null, gives nil bytes.
func encodeObject(v any, limit int) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	if b[0] != '{' {
		return nil, errors.New("must be a JSON object, got " + jsonType(b))
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%d bytes encoded, more than the limit of %d", len(b), limit)
	}
	return b, nil
}

// jsonType names the JSON type of a compact, valid, non-null JSON value.
func jsonType(b []byte) string {
	switch b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
