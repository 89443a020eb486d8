package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"

	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/secret"
	"github.com/convergehq/converge/server/internal/store"
)

// sealInput seals the secret values of a document a client sent (a spec
// or a provider config) at the given schema's secret paths, after it
// passed validation in the clear; a document without secret paths is
// returned as it is. An envelope-shaped object in the input is refused:
// only the server seals. field names the document in errors.
func (s *Service) sealInput(field string, raw []byte, doc any, sch *schema.Schema) ([]byte, error) {
	if secret.Contains(raw) {
		if err := secret.RefuseEnvelopes(doc); err != nil {
			return nil, invalid("%s %v", field, err)
		}
	}
	paths := sch.Secrets()
	if len(paths) == 0 {
		return raw, nil
	}
	sealed, err := s.kinds.Secrets().Seal(doc, paths)
	if errors.Is(err, secret.ErrMarker) {
		return nil, invalid("%s: a secret property (%s): %v", field, secretList(paths), err)
	}
	if err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, err)
	}
	out, err := json.Marshal(sealed)
	if err != nil {
		return nil, invalid("%s: %v", field, err)
	}
	return out, nil
}

func secretList(paths []schema.SecretPath) string {
	parts := make([]string, len(paths))
	for i, p := range paths {
		parts[i] = p.String()
	}
	return strings.Join(parts, ", ")
}

// openStored returns a stored document with its sealed values opened, for
// validating it against a schema in the clear (a rollback's old spec, an
// effective config). The opened document never leaves the server.
func openStored(ctx context.Context, reg *kinds.Registry, doc any) (any, error) {
	return reg.Secrets().Open(ctx, doc)
}

// requireKey refuses a manifest declaring a secret on a server with no
// key: its values could not be sealed.
func (s *Service) requireKey(e *kinds.Entry) error {
	if s.kinds.Secrets() != nil {
		return nil
	}
	if where := e.FirstSecret(); where != "" {
		return connect.NewError(connect.CodeFailedPrecondition,
			fmt.Errorf("kind %s v%d declares a secret property (%s), but %v", e.Kind, e.Version, where, secret.ErrNoKey))
	}
	return nil
}

// ReadResourceSecrets returns a resource's spec and status with their
// sealed values opened, and records the read as an event naming the
// caller: the one way secrets leave the server other than in a task.
func (s *Service) ReadResourceSecrets(ctx context.Context, req *convergev1.ReadResourceSecretsRequest) (*convergev1.ReadResourceSecretsResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	if strings.TrimSpace(req.GetReason()) == "" {
		return nil, invalid("reason: say why the secrets are read; it is recorded in the event")
	}
	read, err := s.store.ReadSecretValues(ctx, key, actor(ctx), req.GetReason())
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ReadResourceSecretsResponse{Generation: read.Generation}
	for _, d := range []struct {
		raw []byte
		to  **structpb.Struct
	}{{read.Spec, &out.Spec}, {read.Status, &out.Status}} {
		opened, err := s.kinds.Secrets().OpenJSON(ctx, d.raw)
		if err != nil {
			return nil, connect.NewError(connect.CodeFailedPrecondition, err)
		}
		var m map[string]any
		if err := json.Unmarshal(opened, &m); err != nil {
			return nil, storeError(err)
		}
		if *d.to, err = structpb.NewStruct(m); err != nil {
			return nil, storeError(err)
		}
	}
	return out, nil
}
