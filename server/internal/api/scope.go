package api

import (
	"context"

	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/store"
)

// Namespaces as tenants: reads of one resource are decided here (403 for
// a namespace the caller may not read, before the resource is looked up,
// so the answer tells nothing about what exists), and reads of many are
// narrowed to what the caller may read, in the store's queries so that
// pages and counts stay right. The rule itself is authz.Policy.ReadScope.

// oneResource is a read request naming one resource.
type oneResource interface {
	GetNamespace() string
	GetKind() string
	GetName() string
}

// readTarget returns the namespace and kind of the one resource a read
// request names, if it names one: a get, history, tree, graph, explain,
// task records or operations of a resource, and events or a Watch
// narrowed to one resource.
func readTarget(msg any) (namespace, kind string, ok bool) {
	m, isOne := msg.(oneResource)
	if !isOne || m.GetName() == "" || m.GetKind() == "" {
		return "", "", false
	}
	return namespaceOr(m.GetNamespace()), m.GetKind(), true
}

// policyOf returns the policy and caller the authorizer put in ctx; a nil
// policy (no authorizer, e.g. tests of the service alone) allows all.
func policyOf(ctx context.Context) (*authz.Policy, string) {
	p, _ := ctx.Value(policyKey{}).(*authz.Policy)
	caller, _ := authz.CallerFrom(ctx)
	return p, caller
}

// checkRead decides a read of one resource of kind in namespace ns. The
// kind's owner team is looked up only when roles and grants do not
// decide it already, so most reads cost no query.
func (s *Service) checkRead(ctx context.Context, procedure, ns, kind string) error {
	p, caller := policyOf(ctx)
	r := authz.Request{Procedure: procedure, Need: authz.NeedRead, Kind: kind, Namespace: ns}
	if p.Decide(caller, r) == nil {
		return nil
	}
	var err error
	if r.Owner, r.Exists, err = s.kindOwner(ctx, kindRef{kind: kind}); err != nil {
		return err
	}
	return p.Decide(caller, r)
}

// visible returns what a list, count, event or watch query may show the
// caller: nil (no predicate) for a caller who may read everything.
func (s *Service) visible(ctx context.Context) *store.Visible {
	p, caller := policyOf(ctx)
	if p.ReadScope(caller, nil).All {
		return nil
	}
	sc := p.ReadScope(caller, s.kinds.Owners())
	return &store.Visible{Namespaces: sc.Namespaces, Kinds: sc.Kinds}
}

// readable returns the caller's read rule as a function, for filtering
// what a query has already returned (the outside ends of a graph's edges).
func (s *Service) readable(ctx context.Context) func(ns, kind string) bool {
	p, caller := policyOf(ctx)
	if p.ReadScope(caller, nil).All {
		return func(string, string) bool { return true }
	}
	return p.ReadScope(caller, s.kinds.Owners()).Allows
}
