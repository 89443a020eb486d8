package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

// Authorizer returns the interceptor that identifies each caller (for
// audit) and refuses requests the policy does not allow, before the
// handler runs.
func (s *Service) Authorizer(p *authz.Policy) connect.Interceptor {
	return &authorizer{svc: s, policy: p}
}

type authorizer struct {
	svc    *Service
	policy *authz.Policy
}

func (a *authorizer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		ctx, err := a.check(ctx, req.Spec().Procedure, req.Header(), req.Any())
		if err != nil {
			return nil, err
		}
		method := shortName(req.Spec().Procedure)
		var refs []kindRef
		if authz.NeedOf(method) == authz.NeedKindOwner {
			// Read before the write: a deleted binding no longer names its kind.
			refs, _, _ = a.svc.kindRefs(ctx, req.Any())
		}
		res, err := next(ctx, req)
		if err == nil && len(refs) > 0 {
			a.svc.recordKindWrite(ctx, method, req.Any(), refs)
		}
		return res, err
	}
}

func (a *authorizer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler checks streams (Watch, a read) before the first
// message: a read's decision needs no kind.
func (a *authorizer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := a.check(ctx, conn.Spec().Procedure, conn.RequestHeader(), nil)
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// check identifies the caller, puts the identity in ctx and decides.
func (a *authorizer) check(ctx context.Context, procedure string, h http.Header, msg any) (context.Context, error) {
	var spiffeID string
	if peer, ok := tlsconf.PeerFrom(ctx); ok {
		spiffeID = peer.ID
	}
	caller, err := a.policy.Identify(spiffeID, h.Get("Authorization"))
	if err != nil {
		return ctx, err
	}
	if caller != "" {
		ctx = authz.WithCaller(ctx, caller)
	}
	ctx = context.WithValue(ctx, policyKey{}, a.policy)
	if !a.policy.Enabled() {
		return ctx, nil
	}
	method := shortName(procedure)
	if authz.NeedOf(method) == authz.NeedRead {
		if ns, kind, ok := readTarget(msg); ok {
			return ctx, a.svc.checkRead(ctx, method, ns, kind)
		}
	}
	reqs, err := a.svc.authzRequests(ctx, method, msg)
	if err != nil {
		return ctx, err
	}
	for _, r := range reqs {
		if err := a.policy.Decide(caller, r); err != nil {
			return ctx, err
		}
	}
	return ctx, nil
}

// shortName is a procedure's method name: "ApplyKind" for
// "/converge.v1.ControlService/ApplyKind".
func shortName(procedure string) string {
	return procedure[strings.LastIndex(procedure, "/")+1:]
}

// kindRef is a kind (and version, 0 for the latest) a request touches,
// and for a resource write the namespace it writes in.
type kindRef struct {
	kind      string
	version   int32
	namespace string
}

// authzRequests builds the decisions a request needs, one per kind it
// touches, looking up each kind's owner team in the database.
func (s *Service) authzRequests(ctx context.Context, method string, msg any) ([]authz.Request, error) {
	if p, ok := msg.(*convergev1.PlanChangeRequest); ok {
		return s.planAuthzRequests(ctx, method, p)
	}
	need := authz.NeedOf(method)
	if d, ok := msg.(*convergev1.DeleteResourceRequest); ok && d.GetAbandon() {
		// Skipping teardown can leave external objects nobody tracks.
		need, method = authz.NeedAdmin, method+" with abandon"
	}
	base := authz.Request{Procedure: method, Need: need}
	if need == authz.NeedRead || need == authz.NeedAdmin {
		return []authz.Request{base}, nil
	}
	refs, newOwner, err := s.kindRefs(ctx, msg)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		base.Need = authz.NeedRead
		return []authz.Request{base}, nil
	}
	out := make([]authz.Request, 0, len(refs))
	seen := map[kindRef]bool{}
	type owned struct {
		owner  string
		exists bool
	}
	owners := map[kindRef]owned{} // one look-up per kind version, whatever the namespaces
	for _, ref := range refs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		r := base
		r.Kind, r.NewOwner, r.Namespace = ref.kind, newOwner, ref.namespace
		kv := kindRef{kind: ref.kind, version: ref.version}
		o, ok := owners[kv]
		if !ok {
			if o.owner, o.exists, err = s.kindOwner(ctx, kv); err != nil {
				return nil, err
			}
			owners[kv] = o
		}
		r.Owner, r.Exists = o.owner, o.exists
		out = append(out, r)
	}
	return out, nil
}

// planAuthzRequests asks of a plan what applying its documents asks: a
// kind owner's right for each kind, a resource writer's for the resources.
func (s *Service) planAuthzRequests(ctx context.Context, method string, p *convergev1.PlanChangeRequest) ([]authz.Request, error) {
	var out []authz.Request
	add := func(as string, msg any) error {
		reqs, err := s.authzRequests(ctx, as, msg)
		for _, r := range reqs {
			r.Procedure = method
			out = append(out, r)
		}
		return err
	}
	for _, m := range p.GetKinds() {
		if err := add("ApplyKind", &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			return nil, err
		}
	}
	if len(p.GetResources()) > 0 {
		if err := add("ApplyResources", &convergev1.ApplyResourcesRequest{Resources: p.GetResources()}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kindRefs returns the kinds msg touches and, for a kind manifest, the
// owner team it declares.
func (s *Service) kindRefs(ctx context.Context, msg any) ([]kindRef, string, error) {
	switch m := msg.(type) {
	case *convergev1.ApplyKindRequest:
		return []kindRef{{kind: m.GetManifest().GetKind(), version: m.GetManifest().GetKindVersion()}}, m.GetManifest().GetOwner(), nil
	case *convergev1.DeleteKindRequest:
		return []kindRef{{kind: m.GetKind(), version: m.GetKindVersion()}}, "", nil
	case *convergev1.UpdateKindPolicyRequest:
		return []kindRef{{kind: m.GetKind(), version: m.GetKindVersion()}}, "", nil
	case *convergev1.ApplyProviderConfigRequest:
		return []kindRef{{kind: m.GetConfig().GetKind(), version: m.GetConfig().GetKindVersion()}}, "", nil
	case *convergev1.DeleteProviderConfigRequest:
		return []kindRef{{kind: m.GetKind(), version: m.GetKindVersion()}}, "", nil
	case *convergev1.ApplyReactorBindingRequest:
		return []kindRef{{kind: m.GetBinding().GetReactorKind(), version: m.GetBinding().GetReactorKindVersion()}}, "", nil
	case *convergev1.DeleteReactorBindingRequest:
		b, err := s.store.GetReactorBinding(ctx, m.GetName())
		if errors.Is(err, store.ErrNotFound) {
			// Nothing to delete: the handler answers NotFound to any
			// caller who may read bindings anyway.
			return nil, "", nil
		}
		if err != nil {
			return nil, "", storeError(err)
		}
		return []kindRef{{kind: b.ReactorKind, version: b.ReactorKindVersion}}, "", nil
	case *convergev1.StartRolloutRequest:
		return []kindRef{{kind: m.GetKind(), version: m.GetToVersion()}}, "", nil
	case interface{ GetRolloutId() int64 }:
		r, err := s.store.GetRollout(ctx, m.GetRolloutId(), false)
		if errors.Is(err, store.ErrNotFound) {
			// The handler answers NotFound to any caller who may read.
			return nil, "", nil
		}
		if err != nil {
			return nil, "", storeError(err)
		}
		return []kindRef{{kind: r.Kind, version: r.To}}, "", nil
	case *convergev1.ApplyResourceRequest:
		return []kindRef{{m.GetKind(), m.GetKindVersion(), namespaceOr(m.GetNamespace())}}, "", nil
	case *convergev1.ApplyResourcesRequest:
		// A batch spanning namespaces needs the right in each.
		refs := make([]kindRef, 0, len(m.GetResources()))
		for _, r := range m.GetResources() {
			refs = append(refs, kindRef{r.GetKind(), r.GetKindVersion(), namespaceOr(r.GetNamespace())})
		}
		return refs, "", nil
	case interface {
		GetKind() string
		GetNamespace() string
	}:
		// Resource operator actions: the resource's kind, latest version.
		return []kindRef{{m.GetKind(), 0, namespaceOr(m.GetNamespace())}}, "", nil
	}
	return nil, "", connect.NewError(connect.CodeInternal, fmt.Errorf("authorization: no kind for request %T", msg))
}

// kindOwner returns the owner team of a kind version (version 0: the
// latest registered version) and whether it is registered.
func (s *Service) kindOwner(ctx context.Context, ref kindRef) (owner string, exists bool, err error) {
	var row store.Kind
	if ref.version > 0 {
		row, err = s.store.GetKind(ctx, ref.kind, ref.version)
		if errors.Is(err, store.ErrNotFound) {
			// A new version: its owner is the latest version's.
			ref.version = 0
		} else if err != nil {
			return "", false, storeError(err)
		}
	}
	if ref.version == 0 {
		rows, err := s.store.ListKinds(ctx, ref.kind)
		if err != nil {
			return "", false, storeError(err)
		}
		if len(rows) == 0 {
			return "", false, nil
		}
		row = rows[0]
		for _, r := range rows[1:] {
			if r.Version > row.Version {
				row = r
			}
		}
	}
	var m struct {
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal(row.Manifest, &m); err != nil {
		return "", false, storeError(fmt.Errorf("kind %s v%d: reading the stored manifest's owner: %w", row.Kind, row.Version, err))
	}
	return m.Owner, true, nil
}

// RequireRead admits to next (a plain HTTP read endpoint, e.g. the NDJSON
// Watch) only callers the policy lets read, and names the caller in the
// request context for audit. Refusals are HTTP 401/403 with a JSON error.
func RequireRead(p *authz.Policy, procedure string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var spiffeID string
		if peer, ok := tlsconf.PeerFrom(r.Context()); ok {
			spiffeID = peer.ID
		}
		caller, err := p.Identify(spiffeID, r.Header.Get("Authorization"))
		if err == nil {
			err = p.Decide(caller, authz.Request{Procedure: procedure, Need: authz.NeedRead})
		}
		if err != nil {
			status := http.StatusForbidden
			if connect.CodeOf(err) == connect.CodeUnauthenticated {
				status = http.StatusUnauthorized
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			msg := err.Error()
			var ce *connect.Error
			if errors.As(err, &ce) {
				msg = ce.Message()
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"code": connect.CodeOf(err).String(), "message": msg})
			return
		}
		ctx := context.WithValue(r.Context(), policyKey{}, p)
		if caller != "" {
			ctx = authz.WithCaller(ctx, caller)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// recordKindWrite records a successful write to a kind's definition as an
// event of each kind version it touched, naming the caller (resource
// writes record their own events). A failure to record is logged: the
// write is done and stays done.
func (s *Service) recordKindWrite(ctx context.Context, method string, msg any, refs []kindRef) {
	what := "manifest"
	switch m := msg.(type) {
	case *convergev1.StartRolloutRequest, interface{ GetRolloutId() int64 }:
		// A rollout records each of its steps as an event of its own.
		return
	case *convergev1.DeleteKindRequest:
		what = "kind version deleted"
	case *convergev1.UpdateKindPolicyRequest:
		what = "policy: " + strings.Join(m.GetUpdateMask().GetPaths(), ", ")
	case *convergev1.ApplyProviderConfigRequest:
		what = "provider config " + m.GetConfig().GetName()
	case *convergev1.DeleteProviderConfigRequest:
		what = "provider config " + m.GetName() + " deleted"
	case *convergev1.ApplyReactorBindingRequest:
		what = "reactor binding " + m.GetBinding().GetName()
	case *convergev1.DeleteReactorBindingRequest:
		what = "reactor binding " + m.GetName() + " deleted"
	}
	for _, r := range refs {
		if err := s.store.RecordKindEvent(ctx, r.kind, r.version, method, what, actor(ctx)); err != nil {
			s.log.Warn("recording a kind event failed", "procedure", method, "kind", r.kind, "by", actor(ctx), "err", err)
		}
	}
}
