package api

import (
	"context"
	"encoding/json"
	"fmt"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/secret"
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
	if err != nil {
		return nil, connect.NewError(connect.CodeFailedPrecondition, err)
	}
	out, err := json.Marshal(sealed)
	if err != nil {
		return nil, invalid("%s: %v", field, err)
	}
	return out, nil
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
