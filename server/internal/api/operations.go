package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// InvokeOperation checks the verb and its input against the resource's
// kind version and queues the operation; a worker serving the verb runs
// it. The operation is returned pending.
func (s *Service) InvokeOperation(ctx context.Context, req *convergev1.InvokeOperationRequest) (*convergev1.InvokeOperationResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	input, doc, err := requestDocument("input", req.GetInput())
	if err != nil {
		return nil, err
	}
	// The kind is checked again at commit; if the resource moved to
	// another version or the kind changed in between, validate once more.
	var op store.Operation
	err = s.retryStaleKind(ctx, func(bool) error {
		r, err := s.store.GetResource(ctx, key.Namespace, key.Kind, key.Name)
		if err != nil {
			return storeError(err)
		}
		e := s.kinds.Get(r.Kind, r.KindVersion)
		if e == nil {
			return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(
				"kind %s v%d of %s/%s/%s is not registered", r.Kind, r.KindVersion, r.Namespace, r.Kind, r.Name))
		}
		if err := checkOperation(e, req.GetVerb(), doc); err != nil {
			return err
		}
		op, err = s.store.InvokeOperation(ctx, store.OperationRequest{Key: key, Verb: req.GetVerb(), Input: input,
			KindVersion: r.KindVersion, KindRevision: e.Revision, Actor: actor(ctx), Reason: req.GetReason()})
		return err
	})
	if err != nil {
		return nil, storeError(err)
	}
	s.publish(ctx, notify.Tasks)
	return &convergev1.InvokeOperationResponse{Operation: toOperation(op)}, nil
}

// checkOperation refuses a verb the kind version does not declare and an
// input that does not match the verb's input_schema, naming each path.
func checkOperation(e *kinds.Entry, verb string, doc any) error {
	k := e.Compiled
	if !k.HasVerb(verb) {
		declared := "it declares no operations"
		if verbs := k.Verbs(); len(verbs) > 0 {
			declared = "declared verbs: " + strings.Join(verbs, ", ")
		}
		return invalid("verb: %q is not an operation of kind %s v%d; %s", verb, e.Kind, e.Version, declared)
	}
	err := k.ValidateInput(verb, doc)
	if err == nil {
		return nil
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return invalid("input: %v", err)
	}
	return invalid("input does not match the input_schema of verb %q of kind %s v%d: %s",
		verb, e.Kind, e.Version, inputViolations(ve))
}

// maxInputViolations caps how many violations an error spells out.
const maxInputViolations = 10

// inputViolations renders violations with their paths inside the request:
// "input/replicas: must be >= 1".
func inputViolations(ve *schema.ValidationError) string {
	parts := make([]string, 0, maxInputViolations+1)
	for i, v := range ve.Violations {
		if i == maxInputViolations {
			parts = append(parts, fmt.Sprintf("and %d more", len(ve.Violations)-maxInputViolations))
			break
		}
		parts = append(parts, "input"+v.Path+": "+v.Message)
	}
	return strings.Join(parts, "; ")
}

// GetOperation reads one operation by id.
func (s *Service) GetOperation(ctx context.Context, req *convergev1.GetOperationRequest) (*convergev1.GetOperationResponse, error) {
	op, err := s.store.GetOperation(ctx, req.GetId())
	if err != nil {
		return nil, storeError(err)
	}
	// Named by id, the operation's namespace is known only now.
	if err := s.checkRead(ctx, "GetOperation", op.Namespace, op.Kind); err != nil {
		return nil, err
	}
	return &convergev1.GetOperationResponse{Operation: toOperation(op)}, nil
}

// ListOperations returns a resource's operations, newest first.
func (s *Service) ListOperations(ctx context.Context, req *convergev1.ListOperationsRequest) (*convergev1.ListOperationsResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	ops, err := s.store.ListOperations(ctx, key)
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListOperationsResponse{Operations: make([]*convergev1.Operation, len(ops))}
	for i, op := range ops {
		out.Operations[i] = toOperation(op)
	}
	return out, nil
}

func toOperation(o store.Operation) *convergev1.Operation {
	out := &convergev1.Operation{
		Id:          o.ID,
		Resource:    &convergev1.ResourceRef{Namespace: o.Namespace, Kind: o.Kind, Name: o.Name},
		Verb:        o.Verb,
		Input:       toStruct(o.Input),
		State:       o.State,
		Output:      toStruct(o.Output),
		Actor:       o.Actor,
		Reason:      o.Reason,
		RequestedAt: timestamppb.New(o.RequestedAt),
		FinishedAt:  toTime(o.FinishedAt),
		Attempts:    o.Attempts,
	}
	if o.Message != nil {
		out.Message = *o.Message
	}
	return out
}
