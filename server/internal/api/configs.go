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

// ApplyProviderConfig creates or updates a provider config after checking
// it against its kind version's config_schema (a named config merged onto
// the default; a new default together with every named config).
func (s *Service) ApplyProviderConfig(ctx context.Context, req *convergev1.ApplyProviderConfigRequest) (*convergev1.ApplyProviderConfigResponse, error) {
	c := req.GetConfig()
	raw, doc, err := requestDocument("config", c.GetConfig())
	if err != nil {
		return nil, err
	}
	in := store.ProviderConfig{Kind: c.GetKind(), Version: c.GetKindVersion(), Name: c.GetName(),
		Config: raw, Description: c.GetDescription()}
	var row store.ProviderConfig
	var result string
	err = s.withConfigValidator(ctx, in.Kind, in.Version, func(v store.ConfigValidator) error {
		if e := s.kinds.Get(in.Kind, in.Version); e != nil {
			// Sealed per attempt: a retry may see the kind for the first time.
			var err error
			if in.Config, err = s.sealInput("config", raw, doc, e.Compiled.Config); err != nil {
				return err
			}
		}
		var err error
		row, result, err = s.store.ApplyProviderConfig(ctx, in, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	if result != "unchanged" {
		s.refreshConfigs(ctx)
	}
	return &convergev1.ApplyProviderConfigResponse{Config: toProviderConfig(row), Result: result}, nil
}

// GetProviderConfig returns one provider config.
func (s *Service) GetProviderConfig(ctx context.Context, req *convergev1.GetProviderConfigRequest) (*convergev1.GetProviderConfigResponse, error) {
	row, err := s.store.GetProviderConfig(ctx, req.GetKind(), req.GetKindVersion(), req.GetName())
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.GetProviderConfigResponse{Config: toProviderConfig(row)}, nil
}

// ListProviderConfigs returns provider configs in (kind, version, name)
// order: all, every version of one kind, or one kind version.
func (s *Service) ListProviderConfigs(ctx context.Context, req *convergev1.ListProviderConfigsRequest) (*convergev1.ListProviderConfigsResponse, error) {
	if req.GetKindVersion() != 0 && req.GetKind() == "" {
		return nil, invalid("kind_version: %d given without kind; name the kind too", req.GetKindVersion())
	}
	rows, err := s.store.ListProviderConfigs(ctx, req.GetKind(), req.GetKindVersion())
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListProviderConfigsResponse{}
	for _, r := range rows {
		out.Configs = append(out.Configs, toProviderConfig(r))
	}
	return out, nil
}

// DeleteProviderConfig removes a provider config nothing relies on.
func (s *Service) DeleteProviderConfig(ctx context.Context, req *convergev1.DeleteProviderConfigRequest) (*convergev1.DeleteProviderConfigResponse, error) {
	err := s.withConfigValidator(ctx, req.GetKind(), req.GetKindVersion(), func(v store.ConfigValidator) error {
		return s.store.DeleteProviderConfig(ctx, req.GetKind(), req.GetKindVersion(), req.GetName(), v)
	})
	if err != nil {
		return nil, err
	}
	s.refreshConfigs(ctx)
	return &convergev1.DeleteProviderConfigResponse{}, nil
}

// refreshConfigs reloads this replica's view of the configs before the
// caller hears back, as applying a kind does: a resource applied right
// after its default config is claimed with that config, not the one
// before. Other replicas reload on the wake.
func (s *Service) refreshConfigs(ctx context.Context) {
	if err := s.kinds.Refresh(ctx); err != nil {
		s.log.Warn("refreshing kinds after a provider config change failed; replicas see it at their next poll", "err", err)
	}
	s.publish(ctx, notify.Kinds)
}

// withConfigValidator runs write with a validator for the kind version's
// config_schema. If the kind changed in between, it refreshes the kinds
// and runs write once more. The error is an API error.
func (s *Service) withConfigValidator(ctx context.Context, kind string, version int32, write func(store.ConfigValidator) error) error {
	return configError(s.retryStaleKind(ctx, func(first bool) error {
		e := s.kinds.Get(kind, version)
		if e == nil && first {
			// The kind may be newer than this replica's view.
			if err := s.kinds.Refresh(ctx); err != nil {
				return storeError(err)
			}
			e = s.kinds.Get(kind, version)
		}
		return write(configValidator(ctx, s.kinds, e))
	}))
}

// configValidator validates against e's config_schema. With no entry
// (a kind this replica does not know yet) its revision matches nothing,
// so the store reports the kind as stale or missing.
func configValidator(ctx context.Context, reg *kinds.Registry, e *kinds.Entry) store.ConfigValidator {
	if e == nil {
		return store.ConfigValidator{KindRevision: -1, Validate: func([]byte) error { return nil }}
	}
	return store.ConfigValidator{KindRevision: e.Revision, Validate: func(effective []byte) error {
		doc, err := schema.Decode(effective)
		if err == nil {
			doc, err = openStored(ctx, reg, doc)
		}
		if err != nil {
			return fmt.Errorf("config: %v", err)
		}
		return configViolations(e.Compiled.Config.Validate(doc))
	}}
}

// configViolations renders schema violations with paths under "config",
// e.g. "config.region: must be a string".
func configViolations(err error) error {
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	parts := make([]string, len(ve.Violations))
	for i, v := range ve.Violations {
		parts[i] = configPath(v.Path) + ": " + v.Message
	}
	return errors.New(strings.Join(parts, "; "))
}

// configPath turns a JSON pointer into a field path under "config":
// "/zones/0/name" becomes "config.zones[0].name".
func configPath(pointer string) string {
	var b strings.Builder
	b.WriteString("config")
	if pointer == "" {
		return b.String()
	}
	for _, tok := range strings.Split(pointer[1:], "/") {
		tok, _ = schema.UnescapeToken(tok)
		if isIndexToken(tok) {
			b.WriteString("[" + tok + "]")
		} else {
			b.WriteString("." + tok)
		}
	}
	return b.String()
}

func isIndexToken(tok string) bool {
	if tok == "" {
		return false
	}
	for _, r := range tok {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// configError maps a provider config write's error to an API error.
func configError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrInvalidConfig):
		return connect.NewError(connect.CodeInvalidArgument, errors.New(trimSentinel(err, store.ErrInvalidConfig)))
	case errors.Is(err, store.ErrStaleKind):
		return staleKindError(err)
	}
	return storeError(err)
}

func toProviderConfig(c store.ProviderConfig) *convergev1.ProviderConfig {
	return &convergev1.ProviderConfig{
		Kind: c.Kind, KindVersion: c.Version, Name: c.Name, Config: toStruct(c.Config),
		Description: c.Description, Revision: c.Revision,
		CreatedAt: timestamppb.New(c.CreatedAt), UpdatedAt: timestamppb.New(c.UpdatedAt),
	}
}

// namedConfig is what a resource stores for its provider_config: naming
// the default is the same as naming none, since the default always applies.
func namedConfig(name string) string {
	if name == store.DefaultConfig {
		return ""
	}
	return name
}
