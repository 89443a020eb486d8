package client

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// DefaultNamespace is the namespace the server uses when a request names none.
const DefaultNamespace = "default"

// WaitFor blocks until the resource namespace/kind/name satisfies done, and
// returns it. An empty namespace means DefaultNamespace.
//
// It registers a Watch for the resource before it reads it, so no change
// between the read and the watch can be missed, then reads the resource again
// after each change until done returns true. A broken Watch stream is resumed
// from its last cursor.
//
// When the resource does not exist (or is deleted while waiting), WaitFor
// returns a connect error with code NotFound and the message
// "resource namespace/kind/name not found". When ctx ends first, it returns the
// last version it read (nil if none) and an error that wraps ctx.Err().
func (c *Client) WaitFor(ctx context.Context, namespace, kind, name string, done func(*convergev1.Resource) bool) (*convergev1.Resource, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if kind == "" || name == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("WaitFor: kind and name are required"))
	}
	var last, result *convergev1.Resource
	watch := &convergev1.WatchRequest{Namespace: namespace, Kind: kind, Name: name}
	err := c.Follow(ctx, watch, func(resp *convergev1.WatchResponse) error {
		if !resp.GetHeartbeat() && !mentions(resp.GetChanges(), namespace, kind, name) {
			return nil
		}
		got, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: namespace, Kind: kind, Name: name})
		if connect.CodeOf(err) == connect.CodeNotFound {
			return connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s/%s/%s not found", namespace, kind, name))
		}
		if err != nil {
			return err
		}
		last = got.GetResource()
		if done(last) {
			result = last
			return ErrStop
		}
		return nil
	})
	if result != nil {
		return result, nil
	}
	if ctx.Err() != nil && connect.CodeOf(err) != connect.CodeNotFound {
		return last, fmt.Errorf("wait for resource %s/%s/%s: %w", namespace, kind, name, ctx.Err())
	}
	return last, err
}

func mentions(changes []*convergev1.Change, namespace, kind, name string) bool {
	for _, ch := range changes {
		if ch.GetNamespace() == namespace && ch.GetKind() == kind && ch.GetName() == name {
			return true
		}
	}
	return false
}
