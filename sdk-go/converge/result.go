package converge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"buf.build/go/protovalidate"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

const (
	// maxErrorBytes bounds the error message reported for a failed task;
	// longer messages are cut, so one verbose handler cannot bloat the stream.
	maxErrorBytes = 32 << 10
	// maxStatusBytes bounds a reported status. A larger one is a terminal
	// failure here rather than a message the server refuses, which would
	// break the stream and be re-sent after every reconnect.
	maxStatusBytes = 4 << 20
)

// Result is what a successful handler reports.
type Result struct {
	// Status becomes the resource's status. It must marshal (with
	// encoding/json) to a JSON object: a map, a struct, or a
	// json.RawMessage holding an object, of at most 4 MiB once encoded.
	// Nil, or a value that marshals to null, leaves the status as it was.
	// Anything else is reported as a terminal failure naming the problem.
	// The server validates the status against the kind's status_schema.
	Status any
	// Unhealthy reports that the resource exists but is not healthy; its
	// phase becomes Degraded.
	Unhealthy bool
	// Conditions explain the resource's state; see [Condition].
	Conditions []Condition
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

// buildResult turns a handler's outcome into the message reported to the
// server. It never fails: a result that cannot be encoded or does not meet
// the protocol's rules becomes a terminal error that says why, so a bad
// result can never poison the stream.
func buildResult(lease *convergev1.Lease, res *Result, err error) *convergev1.TaskResult {
	if err != nil {
		return errorResult(lease, err.Error(), IsTerminal(err))
	}
	success := &convergev1.Success{}
	if res != nil {
		status, serr := encodeStatus(res.Status)
		if serr != nil {
			return errorResult(lease, "converge: result "+serr.Error(), true)
		}
		success.Status = status
		success.Unhealthy = res.Unhealthy
		for _, c := range res.Conditions {
			success.Conditions = append(success.Conditions, &convergev1.Condition{
				Type:    strings.ToValidUTF8(c.Type, "\uFFFD"),
				Status:  strings.ToValidUTF8(string(c.Status), "\uFFFD"),
				Reason:  strings.ToValidUTF8(c.Reason, "\uFFFD"),
				Message: strings.ToValidUTF8(c.Message, "\uFFFD"),
			})
		}
	}
	out := &convergev1.TaskResult{Lease: lease, Outcome: &convergev1.TaskResult_Success{Success: success}}
	if verr := protovalidate.Validate(out); verr != nil {
		return errorResult(lease, "converge: invalid result: "+verr.Error(), true)
	}
	return out
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
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	if b[0] != '{' {
		return nil, errors.New("status: must be a JSON object, got " + jsonType(b))
	}
	if len(b) > maxStatusBytes {
		return nil, fmt.Errorf("status: %d bytes encoded, more than the limit of %d", len(b), maxStatusBytes)
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
