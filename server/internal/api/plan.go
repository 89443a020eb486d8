package api

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// A plan runs in three steps, so that no transaction stays open while
// workers compose:
//
//  1. a dry run applies the change's kinds and resources and reads, for
//     each composite among the resources, the task its composer would get
//     (the spec after the change) and its current children and edges;
//  2. each composite's preview task goes to a worker serving its composer
//     (store/previews.go: any broker replica may hand it over), and the
//     plan waits for the answers, up to the preview timeout;
//  3. a second dry run of the kinds computes the fence the apply checks,
//     and confirms that what step 1 read did not change in between.
//
// The answers are compared with the children in plan_diff.go; nothing a
// worker answers is ever applied.

const (
	defaultPreviewTimeout = 10 * time.Second
	// planLifetime is how long a plan_id fences an apply.
	planLifetime = time.Hour
)

// PlanChange implements ControlService.PlanChange.
func (s *Service) PlanChange(ctx context.Context, req *convergev1.PlanChangeRequest) (*convergev1.PlanChangeResponse, error) {
	if len(req.GetKinds())+len(req.GetResources()) == 0 {
		return nil, invalid("kinds, resources: a plan needs at least one kind or resource")
	}
	timeout := defaultPreviewTimeout
	if n := req.GetPreviewTimeoutSeconds(); n > 0 {
		timeout = time.Duration(n) * time.Second
	}
	out := &convergev1.PlanChangeResponse{PlanId: newPlanID()}
	subjects, fence, err := s.planDryRun(ctx, req, out)
	if err != nil {
		return nil, err
	}
	if err := s.runPreviews(ctx, subjects, timeout); err != nil {
		return nil, storeError(err)
	}
	for _, sub := range subjects {
		cp, err := s.comparePlan(ctx, sub)
		if err != nil {
			return nil, storeError(err)
		}
		out.Composites = append(out.Composites, cp)
		fence.addChildKinds(sub)
	}
	if err := s.sealPlan(ctx, req, out.PlanId, fence); err != nil {
		return nil, err
	}
	out.Totals = totalsOf(out.Composites)
	return out, nil
}

// planSubject is one composite being planned.
type planSubject struct {
	key      store.ResourceKey
	subject  store.PlanSubject
	reaction string
	// notPreviewed says why no preview was asked for or came back.
	notPreviewed string
	task         *convergev1.Task
	answer       store.PreviewAnswer
	grace        time.Duration
}

// planDryRun is step 1.
func (s *Service) planDryRun(ctx context.Context, req *convergev1.PlanChangeRequest, out *convergev1.PlanChangeResponse) ([]*planSubject, *planFence, error) {
	dctx, end, err := s.store.BeginDryRun(ctx)
	if err != nil {
		return nil, nil, storeError(err)
	}
	defer end()
	fence, err := s.dryRunKinds(dctx, req, out)
	if err != nil {
		return nil, nil, err
	}
	if err := fence.readResources(dctx, s, req); err != nil {
		return nil, nil, storeError(err)
	}
	if len(req.GetResources()) == 0 {
		return nil, fence, nil
	}
	ar := &convergev1.ApplyResourcesRequest{Resources: req.GetResources()}
	ids := namedResources(ar)
	before, err := s.store.ResourceStates(dctx, ids)
	if err != nil {
		return nil, nil, storeError(err)
	}
	res, err := s.ApplyResources(dctx, ar)
	if err != nil {
		return nil, nil, err
	}
	after, err := s.store.ResourceStates(dctx, ids)
	if err != nil {
		return nil, nil, storeError(err)
	}
	res.DryRun = &convergev1.DryRunReport{}
	for _, id := range ids {
		res.DryRun.Resources = append(res.DryRun.Resources, plannedChange(id, before, after))
	}
	out.Resources = res
	var subjects []*planSubject
	seen := map[store.ResourceKey]bool{}
	for _, id := range ids {
		e := s.kinds.Get(id.Kind, after[id].KindVersion)
		if seen[id] || e == nil || !e.Composes() {
			continue
		}
		seen[id] = true
		sub, err := s.store.ReadPlanSubject(dctx, id)
		if err != nil {
			return nil, nil, storeError(err)
		}
		r, _ := e.Reaction(trigger.SpecChange)
		ps := &planSubject{key: id, subject: sub, reaction: r.Name, grace: e.Compiled.Policy.OrphanGrace}
		c := sub.Claimed
		c.Trigger, c.Attempt = trigger.SpecChange, 1
		c.Lease = store.Lease{Epoch: randomEpoch(), Generation: sub.Generation}
		// The deadline is set when the preview is sent (runPreviews).
		if ps.task, err = broker.PreviewTask(s.kinds, e, c, r.Name, time.Time{}); err != nil {
			return nil, nil, storeError(err)
		}
		subjects = append(subjects, ps)
	}
	return subjects, fence, nil
}

// dryRunKinds applies the change's kinds in the dry run, and records each
// kind's definition before and after for the fence.
func (s *Service) dryRunKinds(dctx context.Context, req *convergev1.PlanChangeRequest, out *convergev1.PlanChangeResponse) (*planFence, error) {
	fence := &planFence{}
	keys := make([]store.KindKey, len(req.GetKinds()))
	for i, m := range req.GetKinds() {
		keys[i] = store.KindKey{Kind: m.GetKind(), Version: m.GetKindVersion()}
	}
	before, err := s.store.KindDigests(dctx, keys)
	if err != nil {
		return nil, storeError(err)
	}
	for i, m := range req.GetKinds() {
		res, err := s.ApplyKind(dctx, &convergev1.ApplyKindRequest{Manifest: m})
		if err != nil {
			return nil, prefixError(fmt.Sprintf("kinds[%d] %s v%d", i, m.GetKind(), m.GetKindVersion()), err)
		}
		res.DryRun = &convergev1.DryRunReport{}
		out.Kinds = append(out.Kinds, res)
	}
	after, err := s.store.KindDigests(dctx, keys)
	if err != nil {
		return nil, storeError(err)
	}
	for i, m := range req.GetKinds() {
		fence.Kinds = append(fence.Kinds, kindFence{KindKey: keys[i], Doc: digestOf(m), Before: before[keys[i]], After: after[keys[i]]})
	}
	return fence, nil
}

// runPreviews is step 2: it asks for a preview of every composite a
// connected worker serves, and waits for the answers until the timeout.
func (s *Service) runPreviews(ctx context.Context, subjects []*planSubject, timeout time.Duration) error {
	var reqs []store.PreviewRequest
	var asked []*planSubject
	expires := time.Now().Add(timeout)
	refreshed := false
	for _, ps := range subjects {
		k, v := ps.key.Kind, ps.subject.Version
		ready, why := s.members.Serves(k, v, ps.reaction)
		if !ready && !refreshed {
			// What the replicas serve is read every heartbeat; a worker that
			// connected since may not be in it yet, so read it again once.
			s.members.Refresh(ctx)
			refreshed = true
			ready, why = s.members.Serves(k, v, ps.reaction)
		}
		if !ready {
			ps.notPreviewed = fmt.Sprintf("no connected worker serves kind %s v%d reaction %s", k, v, ps.reaction)
			if why != "" {
				ps.notPreviewed += " (connected ones are not ready: " + why + ")"
			}
			continue
		}
		ps.task.Deadline = timestamppb.New(expires)
		raw, err := proto.Marshal(ps.task)
		if err != nil {
			return err
		}
		reqs = append(reqs, store.PreviewRequest{Reaction: store.Reaction{Kind: k, Version: v, Reaction: ps.reaction}, Task: raw, Expires: expires})
		asked = append(asked, ps)
	}
	if len(reqs) == 0 {
		return nil
	}
	wake, stop := s.bus.Subscribe(notify.Previews)
	defer stop()
	// The previews are the plan's own rows, outside any transaction, so
	// that a broker in another process sees them; they go when it ends.
	ids, err := s.store.SubmitPreviews(ctx, reqs)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.store.DeletePreviews(cctx, ids); err != nil {
			s.log.Warn("removing a plan's previews failed; they expire", "err", err)
		}
	}()
	s.bus.Publish(notify.Previews)
	byID := make(map[int64]*planSubject, len(ids))
	for i, id := range ids {
		byID[id] = asked[i]
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for len(byID) > 0 {
		pending := make([]int64, 0, len(byID))
		for id := range byID {
			pending = append(pending, id)
		}
		answers, err := s.store.PreviewAnswers(ctx, pending)
		if err != nil {
			return err
		}
		for _, a := range answers {
			byID[a.ID].answer = a
			delete(byID, a.ID)
		}
		if len(byID) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			for _, ps := range byID {
				ps.notPreviewed = fmt.Sprintf("no worker serving kind %s v%d reaction %s answered the preview within %s",
					ps.key.Kind, ps.subject.Version, ps.reaction, timeout)
			}
			return nil
		case <-wake:
		case <-poll.C:
		}
	}
	return nil
}

// prefixError puts where in front of a connect error's message, keeping
// its code.
func prefixError(where string, err error) error {
	var ce *connect.Error
	if errors.As(err, &ce) {
		return connect.NewError(ce.Code(), fmt.Errorf("%s: %s", where, ce.Message()))
	}
	return fmt.Errorf("%s: %w", where, err)
}

func newPlanID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "plan-" + hex.EncodeToString(b[:])
}

// randomEpoch is a preview lease's epoch: random, positive, like a claim's.
func randomEpoch() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>1) | 1
}
