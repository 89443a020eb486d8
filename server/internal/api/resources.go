package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// DefaultNamespace is used when a request names none.
const DefaultNamespace = "default"

func namespaceOr(ns string) string {
	if ns == "" {
		return DefaultNamespace
	}
	return ns
}

// ApplyResource creates or updates one resource.
func (s *Service) ApplyResource(ctx context.Context, req *convergev1.ApplyResourceRequest) (*convergev1.ApplyResourceResponse, error) {
	var res *convergev1.ApplyResourceResponse
	err := s.fenced(ctx, req.GetPlanId(), func(ctx context.Context) error {
		if err := s.checkResourcePlan(ctx, req.GetPlanId(), []*convergev1.ApplyResourceRequest{req}, false); err != nil {
			return err
		}
		var err error
		res, err = s.applyResource(ctx, req)
		return err
	})
	return res, err
}

func (s *Service) applyResource(ctx context.Context, req *convergev1.ApplyResourceRequest) (*convergev1.ApplyResourceResponse, error) {
	results, err := s.apply(ctx, []*convergev1.ApplyResourceRequest{req}, false)
	if err != nil {
		return nil, err
	}
	r, err := s.store.GetResource(ctx, namespaceOr(req.GetNamespace()), req.GetKind(), req.GetName())
	if err != nil {
		return nil, storeError(err)
	}
	return &convergev1.ApplyResourceResponse{Resource: toResource(r, s.isParked), Result: results[0].Result}, nil
}

// ApplyResources creates or updates a batch of resources, all or none.
func (s *Service) ApplyResources(ctx context.Context, req *convergev1.ApplyResourcesRequest) (*convergev1.ApplyResourcesResponse, error) {
	var res *convergev1.ApplyResourcesResponse
	err := s.fenced(ctx, req.GetPlanId(), func(ctx context.Context) error {
		if err := s.checkResourcePlan(ctx, req.GetPlanId(), req.GetResources(), true); err != nil {
			return err
		}
		var err error
		res, err = s.applyResources(ctx, req)
		return err
	})
	return res, err
}

func (s *Service) applyResources(ctx context.Context, req *convergev1.ApplyResourcesRequest) (*convergev1.ApplyResourcesResponse, error) {
	results, err := s.apply(ctx, req.GetResources(), true)
	if err != nil {
		return nil, err
	}
	out := &convergev1.ApplyResourcesResponse{Results: make([]*convergev1.ApplyResult, len(results))}
	for i, r := range results {
		in := req.GetResources()[i]
		out.Results[i] = &convergev1.ApplyResult{
			Namespace: namespaceOr(in.GetNamespace()), Kind: in.GetKind(), Name: in.GetName(),
			Uid: fmt.Sprint(r.ID), Generation: r.Generation, Result: r.Result,
		}
	}
	return out, nil
}

// apply validates every item against its kind, then writes them in one
// transaction. If a kind changed in between, it validates again against
// the new kind once.
func (s *Service) apply(ctx context.Context, reqs []*convergev1.ApplyResourceRequest, batch bool) ([]store.ApplyResult, error) {
	return s.applyAs(ctx, store.SourceApply, actor(ctx), reqs, batch)
}

// applyAs is apply with the history source and the actor given.
func (s *Service) applyAs(ctx context.Context, source, who string, reqs []*convergev1.ApplyResourceRequest, batch bool) ([]store.ApplyResult, error) {
	var (
		results   []store.ApplyResult
		scheduled bool
	)
	err := s.retryStaleKind(ctx, func(first bool) error {
		inputs, err := s.validate(reqs, batch)
		if err != nil {
			return err
		}
		done := func(bool) {}
		if first && !store.InDryRun(ctx) {
			if done, err = s.admission.Admit(ctx, kindCounts(inputs)); err != nil {
				return err
			}
		}
		results, scheduled, err = s.store.ApplyResourcesFrom(ctx, source, who, inputs)
		done(err == nil)
		return err
	})
	if err != nil {
		return nil, storeError(err)
	}
	if scheduled {
		s.publish(ctx, notify.Tasks)
	}
	s.publish(ctx, notify.Changes)
	return results, nil
}

// kindCounts counts the inputs of each kind, for admission.
func kindCounts(inputs []store.ApplyInput) map[string]int {
	out := make(map[string]int, 1)
	for _, in := range inputs {
		out[in.Kind]++
	}
	return out
}

// validate checks each request against its kind: the kind exists and is
// not a reactor kind, and the spec fits the size limit and the spec
// schema. Errors name the item and the JSON path.
func (s *Service) validate(reqs []*convergev1.ApplyResourceRequest, batch bool) ([]store.ApplyInput, error) {
	inputs := make([]store.ApplyInput, len(reqs))
	for i, r := range reqs {
		where := ""
		if batch {
			where = fmt.Sprintf("resources[%d] ", i)
		}
		ns := namespaceOr(r.GetNamespace())
		id := fmt.Sprintf("%s%s/%s/%s", where, ns, r.GetKind(), r.GetName())
		if batch && r.GetDryRun() {
			return nil, invalid("resources[%d].dry_run: a batch is a dry run as a whole; set dry_run on the ApplyResources request", i)
		}
		e := s.kinds.Get(r.GetKind(), r.GetKindVersion())
		if e == nil {
			return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf(
				"%s: kind %s v%d is not registered; apply its manifest first", id, r.GetKind(), r.GetKindVersion()))
		}
		if e.Compiled.IsReactor() {
			return nil, invalid("%s: kind %s v%d is a reactor kind; it reacts to other resources and has no resources of its own",
				id, r.GetKind(), r.GetKindVersion())
		}
		spec, doc, err := requestDocument(id+": spec", r.GetSpec())
		if err != nil {
			return nil, err
		}
		if err := e.ValidateSpec(doc); err != nil {
			return nil, invalid("%s: spec does not match the spec_schema of %s v%d: %v", id, e.Kind, e.Version, err)
		}
		if spec, err = s.sealInput(id+": spec", spec, doc, e.Compiled.Spec); err != nil {
			return nil, err
		}
		lbl, err := json.Marshal(r.GetLabels())
		if err != nil {
			return nil, invalid("%s: labels: %v", id, err)
		}
		if r.GetLabels() == nil {
			lbl = []byte("{}")
		}
		if r.GetManagementPolicy() == trigger.PolicyObserve && !e.Observes() {
			return nil, invalid("%s: management_policy: kind %s v%d has no observe reaction, so its resources cannot be observed (rule M26)",
				id, e.Kind, e.Version)
		}
		inputs[i] = store.ApplyInput{Namespace: ns, Kind: r.GetKind(), KindVersion: r.GetKindVersion(), Name: r.GetName(),
			Labels: lbl, Spec: spec, DeletionPolicy: r.GetDeletionPolicy(), KindRevision: e.Revision,
			ProviderConfig: namedConfig(r.GetProviderConfig()), ManagementPolicy: r.GetManagementPolicy(),
			ImportID: r.GetImport().GetId()}
	}
	return inputs, nil
}

// GetResource reads one resource.
func (s *Service) GetResource(ctx context.Context, req *convergev1.GetResourceRequest) (*convergev1.GetResourceResponse, error) {
	r, err := s.store.GetResource(ctx, namespaceOr(req.GetNamespace()), req.GetKind(), req.GetName())
	if err != nil {
		return nil, storeError(err)
	}
	out := toResource(r, s.isParked)
	if err := s.explainRollup(ctx, r, out, true); err != nil {
		return nil, storeError(err)
	}
	return &convergev1.GetResourceResponse{Resource: out}, nil
}

// explainRollup explains a composite by its children, in a ChildrenReady
// condition and, when it is not Ready because of them, in its Ready
// condition: how many are ready and, with lookUp, the culprit descendants
// (also on its rollup). It is the one place that words a composite's
// rollup: get, describe and list show its text.
func (s *Service) explainRollup(ctx context.Context, r store.Resource, out *convergev1.Resource, lookUp bool) error {
	if out.Rollup == nil {
		return nil
	}
	cond := &convergev1.Condition{Type: "ChildrenReady", Status: "True", Reason: ReasonAllReady,
		Message: fmt.Sprintf("%d of %d children ready", out.Rollup.Ready, out.Rollup.Total), ObservedGeneration: r.SyncedGeneration}
	if out.Rollup.Ready < out.Rollup.Total {
		var culprits []*convergev1.Culprit
		if lookUp {
			var err error
			if culprits, err = s.culprits(ctx, r.ID); err != nil {
				return err
			}
		}
		out.Rollup.Culprits = culprits
		cond.Status, cond.Reason = "False", ReasonChildrenReconciling
		switch {
		case out.Rollup.Failed > 0:
			cond.Reason = ReasonChildFailed
		case out.Rollup.Degraded > 0:
			cond.Reason = ReasonChildDegraded
		}
		var names []string
		for _, c := range culprits {
			msg := c.GetResource().GetKind() + "/" + c.GetResource().GetName() + " is " + c.GetPhase()
			if c.GetMessage() != "" {
				msg += ": " + c.GetMessage()
			}
			names = append(names, msg)
		}
		if len(names) > 0 {
			cond.Message += "; " + strings.Join(names, "; ")
		}
		for _, c := range out.Conditions {
			if c.GetType() == "Ready" && c.GetStatus() == "False" && c.GetMessage() == "" {
				c.Message = cond.Message
			}
		}
	}
	out.Conditions = append(out.Conditions, cond)
	return nil
}

// maxCulpritLookUps bounds the composites of one ListResources page whose
// culprits are looked up.
const maxCulpritLookUps = 100

// ListResources pages through resources in (namespace, kind, name) order.
func (s *Service) ListResources(ctx context.Context, req *convergev1.ListResourcesRequest) (*convergev1.ListResourcesResponse, error) {
	sel, err := labels.Parse(req.GetLabelSelector())
	if err != nil {
		return nil, invalid("label_selector: %v", err)
	}
	f := store.ListFilter{
		Namespace: req.GetNamespace(), Kind: req.GetKind(), KindVersion: req.GetKindVersion(),
		Phases: req.GetPhases(), Selector: sel, Limit: int(req.GetPageSize()), Summary: req.GetSummary(),
		NameContains: req.GetNameContains(), Visible: s.visible(ctx),
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if tok := req.GetPageToken(); tok != "" {
		k, err := decodePageToken(tok)
		if err != nil {
			return nil, invalid("page_token: %v", err)
		}
		f.After = &k
	}
	// Take the watch cursor before reading, so a Watch from it misses
	// nothing that the listing does not show.
	cursor, err := s.store.CurrentCursor(ctx)
	if err != nil {
		return nil, storeError(err)
	}
	rows, more, err := s.store.ListResources(ctx, f)
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListResourcesResponse{WatchCursor: cursor.String()}
	lookUps := 0
	for _, r := range rows {
		res := toResource(r, s.isParked)
		// A composite that failed or degraded through its children names
		// the culprits, as get does; a list shows that message where it
		// would otherwise show nothing. Each look-up is a query, so a page
		// makes at most maxCulpritLookUps, and composites whose children
		// merely reconcile, a passing state, show only the counts.
		lookUp := res.Rollup != nil && res.Rollup.Failed+res.Rollup.Degraded > 0 && lookUps < maxCulpritLookUps
		if lookUp {
			lookUps++
		}
		if err := s.explainRollup(ctx, r, res, lookUp); err != nil {
			return nil, storeError(err)
		}
		out.Resources = append(out.Resources, res)
	}
	if more && len(rows) > 0 {
		last := rows[len(rows)-1]
		out.NextPageToken = encodePageToken(store.ResourceKey{Namespace: last.Namespace, Kind: last.Kind, Name: last.Name})
	}
	return out, nil
}

func encodePageToken(k store.ResourceKey) string {
	b, _ := json.Marshal([]string{k.Namespace, k.Kind, k.Name})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageToken(tok string) (store.ResourceKey, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	var parts []string
	if err == nil {
		err = json.Unmarshal(raw, &parts)
	}
	if err != nil || len(parts) != 3 {
		return store.ResourceKey{}, fmt.Errorf("%q is not a page token this server issued", tok)
	}
	return store.ResourceKey{Namespace: parts[0], Kind: parts[1], Name: parts[2]}, nil
}

// DeleteResource deletes a resource, through its kind's teardown reaction
// if it has one.
func (s *Service) DeleteResource(ctx context.Context, req *convergev1.DeleteResourceRequest) (*convergev1.DeleteResourceResponse, error) {
	key := store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()}
	if req.GetAbandon() || req.GetSubtree() {
		return s.abandon(ctx, key, req)
	}
	cur, err := s.store.GetResource(ctx, key.Namespace, key.Kind, key.Name)
	if err != nil {
		return nil, storeError(err)
	}
	var policy store.TeardownPolicy
	if e := s.kinds.Get(cur.Kind, cur.KindVersion); e != nil {
		policy = e.Teardown()
	}
	r, gone, err := s.store.DeleteResource(ctx, actor(ctx), key, policy)
	if err != nil {
		return nil, storeError(err)
	}
	// Either way the database queued work: a teardown, or (for a child
	// removed at once) its composite's recompose and rollup.
	s.publish(ctx, notify.Changes)
	s.publish(ctx, notify.Tasks)
	if gone {
		return &convergev1.DeleteResourceResponse{}, nil
	}
	return &convergev1.DeleteResourceResponse{Resource: toResource(r, s.isParked)}, nil
}

// abandon removes a resource, and with subtree its descendants, without
// teardown (the authorizer has checked the admin role).
func (s *Service) abandon(ctx context.Context, key store.ResourceKey, req *convergev1.DeleteResourceRequest) (*convergev1.DeleteResourceResponse, error) {
	switch {
	case !req.GetAbandon():
		return nil, invalid("subtree: only with abandon (a plain delete always takes everything the resource owns)")
	case strings.TrimSpace(req.GetReason()) == "":
		return nil, invalid("reason: required with abandon; it is recorded with what was left behind")
	}
	gone, err := s.store.AbandonResource(ctx, actor(ctx), key, req.GetSubtree(), req.GetReason())
	if err != nil {
		return nil, storeError(err)
	}
	s.publish(ctx, notify.Changes)
	s.publish(ctx, notify.Tasks)
	out := &convergev1.DeleteResourceResponse{}
	for _, st := range gone {
		out.Abandoned = append(out.Abandoned, &convergev1.ResourceRef{Namespace: st.Namespace, Kind: st.Kind, Name: st.Name})
	}
	return out, nil
}

// ListEvents returns events newest first.
func (s *Service) ListEvents(ctx context.Context, req *convergev1.ListEventsRequest) (*convergev1.ListEventsResponse, error) {
	f := store.EventFilter{Namespace: req.GetNamespace(), Kind: req.GetKind(), Name: req.GetName(), Limit: int(req.GetPageSize()),
		Visible: s.visible(ctx)}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.Name != "" && f.Namespace == "" {
		f.Namespace = DefaultNamespace
	}
	if tok := req.GetPageToken(); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err == nil {
			_, err = fmt.Sscanf(string(raw), "e%d", &f.BeforeID)
		}
		if err != nil {
			return nil, invalid("page_token: %q is not a page token this server issued", tok)
		}
	}
	events, err := s.store.ListEvents(ctx, f)
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.ListEventsResponse{}
	for _, e := range events {
		out.Events = append(out.Events, toEvent(e))
	}
	if len(events) == f.Limit {
		out.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("e%d", events[len(events)-1].ID)))
	}
	return out, nil
}
