package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The states of an operation (convergev1.Operation.State). Pending and
// running ones are still in progress; succeeded and failed ones are final.
const (
	OperationPending   = "pending"
	OperationRunning   = "running"
	OperationSucceeded = "succeeded"
	OperationFailed    = "failed"
)

// defaultOperationPoll is the longest gap between reads of an operation.
const defaultOperationPoll = 2 * time.Second

// OperationFinished reports whether op has reached a final state:
// succeeded or failed. A nil operation has not.
func OperationFinished(op *convergev1.Operation) bool {
	s := op.GetState()
	return s == OperationSucceeded || s == OperationFailed
}

// WaitForOperation blocks until the operation with id has finished, and
// returns it: check its State for succeeded or failed, its Output and its
// Message. An operation that failed is not an error of WaitForOperation.
//
// Operations are not on the Watch stream, so it polls GetOperation: at
// once, then 100ms later, backing off to every 2s (see WithPollInterval).
// When ctx ends first, it returns the last version it read (nil if none)
// and an error that wraps ctx.Err(); any other error is GetOperation's,
// such as a connect error with code NotFound for an unknown id.
func (c *Client) WaitForOperation(ctx context.Context, id string, opts ...WaitOption) (*convergev1.Operation, error) {
	if id == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("WaitForOperation: id is required"))
	}
	cfg := newWaitConfig(defaultOperationPoll, opts)
	poll := newPoller(cfg.pollInterval)
	defer poll.stop()
	poll.reset()
	var last *convergev1.Operation
	for {
		got, err := c.GetOperation(ctx, &convergev1.GetOperationRequest{Id: id})
		switch {
		case err != nil && ctx.Err() != nil:
			return last, fmt.Errorf("wait for operation %s: %w", id, ctx.Err())
		case err != nil:
			return last, err
		}
		last = got.GetOperation()
		if OperationFinished(last) {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("wait for operation %s: %w", id, ctx.Err())
		case <-poll.c():
			poll.backOff()
		}
	}
}
