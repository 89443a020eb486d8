package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// A plan's fence is stored with its id (table plans): per kind document,
// its digest and the kind's definition before and after the plan; per
// resource document, its digest, the kind versions its plan used and the
// digests of what it read (store.ResourceFence). An apply with the plan_id
// recomputes them: a kind may be as it was or as planned (an earlier call
// of the same apply wrote it); a resource's reads must be exactly as they
// were, with the plan's kinds as planned. Being per document, the fence
// holds whether the apply sends the documents in one call or in several.

type planFence struct {
	Kinds     []kindFence     `json:"kinds"`
	Resources []resourceFence `json:"resources"`
}

type kindFence struct {
	store.KindKey
	Doc    string `json:"doc"`
	Before string `json:"before"`
	After  string `json:"after"`
}

type resourceFence struct {
	store.ResourceKey
	Doc   string          `json:"doc"`
	Kinds []store.KindKey `json:"kinds"`
	// pre is what step 1 read with the resource's own kind only; step 3
	// reads it again to see that nothing moved while workers composed.
	pre   store.FenceParts
	Reads store.FenceParts `json:"reads"`
}

// digestOf is a document's digest: its deterministic encoding, without
// the fields that say how to apply it rather than what.
func digestOf(m proto.Message) string {
	m = proto.Clone(m)
	if r, ok := m.(*convergev1.ApplyResourceRequest); ok {
		r.Namespace, r.DryRun, r.PlanId = namespaceOr(r.GetNamespace()), false, ""
	}
	raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func keyOfRequest(r *convergev1.ApplyResourceRequest) store.ResourceKey {
	return store.ResourceKey{Namespace: namespaceOr(r.GetNamespace()), Kind: r.GetKind(), Name: r.GetName()}
}

// readResources records each resource document and what step 1 reads of
// it, after the kinds and before the resources are applied.
func (f *planFence) readResources(dctx context.Context, s *Service, req *convergev1.PlanChangeRequest) error {
	for _, r := range req.GetResources() {
		rf := resourceFence{ResourceKey: keyOfRequest(r), Doc: digestOf(r),
			Kinds: []store.KindKey{{Kind: r.GetKind(), Version: r.GetKindVersion()}}}
		var err error
		if rf.pre, err = s.store.ResourceFence(dctx, rf.ResourceKey, rf.Kinds); err != nil {
			return err
		}
		f.Resources = append(f.Resources, rf)
	}
	return nil
}

// addChildKinds adds the kinds of a composite's children, now and
// planned, to what its plan used.
func (f *planFence) addChildKinds(ps *planSubject) {
	for i := range f.Resources {
		rf := &f.Resources[i]
		if rf.ResourceKey != ps.key {
			continue
		}
		seen := map[store.KindKey]bool{}
		for _, k := range rf.Kinds {
			seen[k] = true
		}
		add := func(k store.KindKey) {
			if !seen[k] {
				seen[k] = true
				rf.Kinds = append(rf.Kinds, k)
			}
		}
		for _, c := range ps.subject.Children {
			add(store.KindKey{Kind: c.Kind, Version: c.Version})
		}
		res := &convergev1.TaskResult{}
		if proto.Unmarshal(ps.answer.Result, res) == nil {
			for _, c := range res.GetSuccess().GetComposition().GetChildren() {
				add(store.KindKey{Kind: c.GetKind(), Version: c.GetKindVersion()})
			}
		}
	}
}

// sealPlan is step 3: with the kinds applied again in a dry run, it reads
// each resource's fence and stores it.
func (s *Service) sealPlan(ctx context.Context, req *convergev1.PlanChangeRequest, id string, f *planFence) error {
	dctx, end, err := s.store.BeginDryRun(ctx)
	if err != nil {
		return storeError(err)
	}
	defer end()
	for _, m := range req.GetKinds() {
		if _, err := s.ApplyKind(dctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
			return err
		}
	}
	for i := range f.Resources {
		rf := &f.Resources[i]
		again, err := s.store.ResourceFence(dctx, rf.ResourceKey, rf.Kinds[:1])
		if err != nil {
			return storeError(err)
		}
		if rf.Reads, err = s.store.ResourceFence(dctx, rf.ResourceKey, rf.Kinds); err != nil {
			return storeError(err)
		}
		// A part that moved while the workers composed (a converging
		// composite's children do) is not what the plan read: the plan is
		// answered, but its id fences nothing of that part into an apply.
		rf.Reads.Resource = unlessMoved(rf.pre.Resource, again.Resource, rf.Reads.Resource)
		rf.Reads.Kinds = unlessMoved(rf.pre.Kinds, again.Kinds, rf.Reads.Kinds)
		rf.Reads.Children = unlessMoved(rf.pre.Children, again.Children, rf.Reads.Children)
		rf.Reads.Edges = unlessMoved(rf.pre.Edges, again.Edges, rf.Reads.Edges)
	}
	end()
	raw, err := json.Marshal(f)
	if err != nil {
		return storeError(err)
	}
	return storeError(s.store.SavePlan(ctx, id, raw, time.Now().Add(planLifetime)))
}

// movedWhilePlanning stands in a fence for a part that changed between
// the plan's reads: no apply can match it.
const movedWhilePlanning = "moved while planning"

func unlessMoved(was, again, now string) string {
	if was != again {
		return movedWhilePlanning
	}
	return now
}

// fenceChange names the first part that differs, or "" when none does.
func fenceChange(was, now store.FenceParts) string {
	switch {
	case was.Resource != now.Resource:
		return "the resource (its spec, labels, generation, kind version or deletion)"
	case was.Kinds != now.Kinds:
		return "a kind manifest it uses"
	case was.Children != now.Children:
		return "its children (their specs, statuses, generations, or which exist)"
	case was.Edges != now.Edges:
		return "its edges (their flows, or the statuses or sync of their dependencies)"
	}
	return ""
}

// loadPlan reads a plan's fence for an apply that names it.
func (s *Service) loadPlan(ctx context.Context, id string) (*planFence, error) {
	raw, err := s.store.LoadPlan(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("plan_id %q: no such plan, or it expired (a plan fences an apply for %s); plan again", id, planLifetime))
	}
	if err != nil {
		return nil, storeError(err)
	}
	f := &planFence{}
	if err := json.Unmarshal(raw, f); err != nil {
		return nil, storeError(fmt.Errorf("plan %s: %w", id, err))
	}
	return f, nil
}

// checkKindPlan refuses a kind apply whose plan does not hold any more;
// it runs in the apply's transaction (see fenced).
func (s *Service) checkKindPlan(ctx context.Context, req *convergev1.ApplyKindRequest) error {
	if req.GetPlanId() == "" {
		return nil
	}
	f, err := s.loadPlan(ctx, req.GetPlanId())
	if err != nil {
		return err
	}
	m := req.GetManifest()
	key := store.KindKey{Kind: m.GetKind(), Version: m.GetKindVersion()}
	for _, kf := range f.Kinds {
		if kf.KindKey != key {
			continue
		}
		if kf.Doc != digestOf(m) {
			return failedPlan("kind %s v%d: the manifest is not the one plan %s planned", key.Kind, key.Version, req.GetPlanId())
		}
		if err := s.store.LockPlanReads(ctx, store.ResourceKey{}, []store.KindKey{key}); err != nil {
			return storeError(err)
		}
		now, err := s.store.KindDigests(ctx, []store.KindKey{key})
		if err != nil {
			return storeError(err)
		}
		if d := now[key]; d != kf.Before && d != kf.After {
			return failedPlan("kind %s v%d changed since plan %s was made; plan again", key.Kind, key.Version, req.GetPlanId())
		}
		return nil
	}
	return failedPlan("kind %s v%d is not in plan %s; plan the change with it", key.Kind, key.Version, req.GetPlanId())
}

// checkResourcePlan refuses a resource apply whose plan does not hold
// any more, naming the document and what changed. It runs in the apply's
// transaction (see fenced), holding what it read until the write commits.
func (s *Service) checkResourcePlan(ctx context.Context, id string, reqs []*convergev1.ApplyResourceRequest, batch bool) error {
	if id == "" {
		return nil
	}
	f, err := s.loadPlan(ctx, id)
	if err != nil {
		return err
	}
	byKey := map[store.ResourceKey]resourceFence{}
	for _, rf := range f.Resources {
		byKey[rf.ResourceKey] = rf
	}
	for i, r := range reqs {
		key := keyOfRequest(r)
		where := key.Namespace + "/" + key.Kind + "/" + key.Name
		if batch {
			where = fmt.Sprintf("resources[%d] %s", i, where)
		}
		rf, ok := byKey[key]
		if !ok {
			return failedPlan("%s: not in plan %s; plan the change with it", where, id)
		}
		if rf.Doc != digestOf(r) {
			return failedPlan("%s: the document is not the one plan %s planned", where, id)
		}
		if err := s.store.LockPlanReads(ctx, key, rf.Kinds); err != nil {
			return storeError(err)
		}
		now, err := s.store.ResourceFence(ctx, key, rf.Kinds)
		if err != nil {
			return storeError(err)
		}
		if what := fenceChange(rf.Reads, now); what != "" {
			return failedPlan("%s: %s changed since plan %s was made; plan again", where, what, id)
		}
	}
	return nil
}

// fenced runs a write that names a plan: the fence check and the write in
// one transaction, and what the write tells other loops (the kinds cache,
// wake-ups) once it committed. A write naming no plan runs as it is.
func (s *Service) fenced(ctx context.Context, planID string, write func(context.Context) error) error {
	if planID == "" {
		return write(ctx)
	}
	if err := s.store.InOneTransaction(ctx, write); err != nil {
		return storeError(err)
	}
	if store.Uncommitted(ctx) {
		return nil // a dry run's: nothing committed
	}
	if err := s.kinds.Refresh(ctx); err != nil {
		s.log.Warn("refreshing kinds after a fenced apply failed", "err", err)
	}
	for _, ch := range []string{notify.Kinds, notify.Tasks, notify.Changes} {
		s.publish(ctx, ch)
	}
	return nil
}

func failedPlan(format string, args ...any) error {
	return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf(format, args...))
}
