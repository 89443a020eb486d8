package conctl

import (
	"context"
	"fmt"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
)

// applyOne applies a document that goes on its own: a kind, a provider
// config or a reactor binding.
func (a *app) applyOne(ctx context.Context, d *document.Document) (*applied, error) {
	id, _ := objectID(d)
	cctx, cancel := a.call(ctx)
	defer cancel()
	var rec *applied
	var err error
	switch m := d.Message.(type) {
	case *convergev1.KindManifest:
		rec, err = a.applyKind(cctx, m)
	case *convergev1.ProviderConfig:
		rec, err = a.applyProviderConfig(cctx, m)
	case *convergev1.ReactorBinding:
		rec, err = a.applyReactorBinding(cctx, m)
	default:
		return nil, fmt.Errorf("%s: conctl cannot apply a %q document yet", d.Where(), d.Type)
	}
	if err != nil {
		return nil, wrapf(err, "%s: apply %s", d.Where(), id)
	}
	a.reportLine("%s %s", id, rec.Result)
	return rec, nil
}

func (a *app) applyKind(ctx context.Context, m *convergev1.KindManifest) (*applied, error) {
	resp, err := a.client.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: m, PlanId: a.planID})
	if err != nil {
		return nil, err
	}
	return &applied{Type: "kind", Kind: m.GetKind(), KindVersion: m.GetKindVersion(), Result: resp.GetResult()}, nil
}

func (a *app) applyProviderConfig(ctx context.Context, c *convergev1.ProviderConfig) (*applied, error) {
	resp, err := a.client.ApplyProviderConfig(ctx, &convergev1.ApplyProviderConfigRequest{Config: c})
	if err != nil {
		return nil, err
	}
	return &applied{Type: "providerconfig", Kind: c.GetKind(), KindVersion: c.GetKindVersion(), Name: c.GetName(), Result: resp.GetResult()}, nil
}

func (a *app) applyReactorBinding(ctx context.Context, b *convergev1.ReactorBinding) (*applied, error) {
	resp, err := a.client.ApplyReactorBinding(ctx, &convergev1.ApplyReactorBindingRequest{Binding: b})
	if err != nil {
		return nil, err
	}
	return &applied{Type: "reactorbinding", Name: b.GetName(), Result: resp.GetResult()}, nil
}
