package converge

import (
	"encoding/json"
	"fmt"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// maxOutputBytes bounds an operation's output: the server's limit.
const maxOutputBytes = 512 << 10

// Operation is a verb an operator invoked on a resource, for a reaction
// triggered by "operation". The verb and its input schema are declared in
// the kind's manifest; the server has checked the input against it.
//
// The handler reports the operation's output in [Result.Output]; the
// operation then succeeds. An error fails it, or, when transient, has the
// server run it again later: like any task, an operation may run more than
// once, so make its effects idempotent, keyed by ID.
type Operation struct {
	// ID identifies the operation; it is the same on every attempt.
	ID string
	// Verb names the operation, e.g. "rotate-credentials".
	Verb string
	// Input is the verb's input, a JSON object; empty when none was given.
	Input json.RawMessage
}

// DecodeInput unmarshals the operation's input into v, as [json.Unmarshal]
// does. An empty input leaves v unchanged.
func (o *Operation) DecodeInput(v any) error {
	if err := decodeJSON("input", o.Input, v); err != nil {
		return fmt.Errorf("converge: decode input of operation %s (verb %q): %w", o.ID, o.Verb, err)
	}
	return nil
}

// newOperation converts the wire operation; nil when the task carries none.
func newOperation(m *convergev1.OperationTask) *Operation {
	if m == nil {
		return nil
	}
	return &Operation{ID: m.GetId(), Verb: m.GetVerb(), Input: json.RawMessage(m.GetInput())}
}

// encodeOutput marshals a handler's operation output; nil bytes report no
// output. Only an operation task has one, so an output for another task is
// a mistake, reported rather than dropped.
func encodeOutput(t *convergev1.Task, v any) ([]byte, error) {
	b, err := encodeObject(v, maxOutputBytes)
	if err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if b != nil && t.GetOperation() == nil {
		return nil, fmt.Errorf("output: set for a task that runs no operation (trigger %q); only an operation reaction reports an output", t.GetTrigger())
	}
	return b, nil
}
