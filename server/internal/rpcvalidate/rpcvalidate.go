// Package rpcvalidate checks every incoming RPC message against the
// protovalidate rules written in the proto files, so handlers only see
// well-formed requests. A violation is an InvalidArgument error naming
// each offending field.
package rpcvalidate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/server/internal/storable"
)

// Interceptor validates unary requests and every message a client streams.
type Interceptor struct {
	v        protovalidate.Validator
	storable bool
}

// Option tunes the interceptor.
type Option func(*Interceptor)

// RequireStorable also refuses a message holding a value the database
// cannot store (package storable), naming its field. A service whose
// messages carry such values to be judged later (a worker's result,
// failed as the task's outcome) goes without.
func RequireStorable() Option { return func(i *Interceptor) { i.storable = true } }

// New builds the interceptor.
func New(opts ...Option) (*Interceptor, error) {
	v, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	i := &Interceptor{v: v}
	for _, o := range opts {
		o(i)
	}
	return i, nil
}

// Check validates one message and returns an InvalidArgument error
// listing every violation.
func (i *Interceptor) Check(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	// A value that cannot be stored is refused first: it cannot be fixed
	// by following any other message.
	if i.storable {
		if path, why := storable.Message(m); why != "" {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("invalid request: %s: %s", path, why))
		}
	}
	err := i.v.Validate(m)
	if err == nil {
		return nil
	}
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("validating request: %w", err))
	}
	var parts []string
	for _, v := range verr.Violations {
		field := protovalidate.FieldPathString(v.Proto.GetField())
		msg := v.Proto.GetMessage()
		if field == "" {
			parts = append(parts, msg)
		} else {
			parts = append(parts, field+": "+msg)
		}
	}
	return connect.NewError(connect.CodeInvalidArgument, errors.New("invalid request: "+strings.Join(parts, "; ")))
}

// WrapUnary implements connect.Interceptor.
func (i *Interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := i.Check(req.Any()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

// WrapStreamingClient implements connect.Interceptor; clients are not checked.
func (i *Interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler implements connect.Interceptor.
func (i *Interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return next(ctx, &checkedConn{StreamingHandlerConn: conn, i: i})
	}
}

type checkedConn struct {
	connect.StreamingHandlerConn
	i *Interceptor
}

func (c *checkedConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	return c.i.Check(msg)
}
