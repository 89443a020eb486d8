package conctl

import (
	"context"
	"fmt"
	"io"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// describeOps is how many recent operations describe shows.
const describeOps = 5

// recentOperations reads the last operations invoked on ref, oldest first.
// A server without operations has none to show.
func (a *app) recentOperations(ctx context.Context, ref resourceRef) ([]*convergev1.Operation, error) {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.ListOperations(ctx, &convergev1.ListOperationsRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name})
	if connect.CodeOf(err) == connect.CodeUnimplemented {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ops := resp.GetOperations()
	ops = ops[:min(len(ops), describeOps)]
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops, nil
}

// describeOperations lists the resource's last operations, if it has any.
func describeOperations(w io.Writer, d *described) error {
	switch {
	case d.opsErr != nil:
		field(w, "", "Operations", "could not be listed: "+message(d.opsErr))
		return nil
	case len(d.ops) == 0:
		return nil
	}
	fmt.Fprintf(w, "Operations (last %d, oldest first):\n", describeOps)
	return writeOperations(indented(w), d.ops, d.now)
}
