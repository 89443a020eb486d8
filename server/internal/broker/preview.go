package broker

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// preview is a preview task out with a worker (see store/previews.go).
// It is not a lease: nothing of it reaches the tasks table, the result
// applier or the task records. Its answer goes back to the plan call that
// asked, through the previews table, and nowhere else.
type preview struct {
	id        int64
	epoch     int64
	kind      string
	version   int32
	namespace string
	session   *session
	// deadline is the plan's: past it nobody waits for the answer.
	deadline time.Time
	parts    []*convergev1.Composition
	children int
	overflow bool
}

// maxPreviewClaim bounds the previews one claim takes.
const maxPreviewClaim = 1000

// previewLoop hands previews to workers: on a wake-up from a plan call,
// when a worker connects, and on the failsafe poll.
func (b *Broker) previewLoop(ctx context.Context) {
	wake, stop := b.bus.Subscribe(notify.Previews)
	defer stop()
	poll := time.NewTicker(b.cfg.PollInterval)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
		b.claimPreviews(ctx)
	}
}

// servedReactions lists the reactions some connected worker is ready for.
func (b *Broker) servedReactions() []store.Reaction {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[reactionKey]bool{}
	var out []store.Reaction
	for s := range b.sessions {
		if s.draining || s.closed {
			continue
		}
		for rk := range s.serves {
			if !seen[rk] && s.ready(rk) {
				seen[rk] = true
				out = append(out, store.Reaction{Kind: rk.kind, Version: rk.version, Reaction: rk.reaction})
			}
		}
	}
	return out
}

func (b *Broker) claimPreviews(ctx context.Context) {
	b.forgetLatePreviews(time.Now())
	served := b.servedReactions()
	if len(served) == 0 {
		return
	}
	claimed, err := b.store.ClaimPreviews(ctx, b.cfg.MemberID, served, maxPreviewClaim)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Warn("claiming previews failed; retrying on the next poll", "err", err)
		}
		return
	}
	var unsent []int64
	for _, c := range claimed {
		if why := b.sendPreview(c); why != "" {
			if why == errNoWorker {
				unsent = append(unsent, c.ID)
				continue
			}
			b.answerPreview(store.PreviewAnswer{ID: c.ID, Error: why})
		}
	}
	if len(unsent) > 0 {
		if err := b.store.UnclaimPreviews(ctx, unsent); err != nil && ctx.Err() == nil {
			b.log.Warn("giving back previews failed; they time out", "err", err)
		}
	}
}

const errNoWorker = "no worker"

// sendPreview sends a claimed preview to the worker serving its reaction
// with the most free slots. A preview takes no slot and no share of the
// kind's cap: it is counted nowhere real work is, so it can never hold
// real work back; the worker runs it among its own tasks.
func (b *Broker) sendPreview(c store.Preview) string {
	t := &convergev1.Task{}
	if err := proto.Unmarshal(c.Task, t); err != nil {
		return fmt.Sprintf("the preview task cannot be read: %v", err)
	}
	t.Preview = true
	t, err := b.openTask(t)
	if err != nil {
		return fmt.Sprintf("the preview task's secret values cannot be opened: %v", err)
	}
	rk := reactionKey{c.Kind, c.Version, c.Reaction.Reaction}
	b.mu.Lock()
	defer b.mu.Unlock()
	var best *session
	for s := range b.sessions {
		if s.draining || s.closed || !s.ready(rk) {
			continue
		}
		if best == nil || s.capacity-s.inflight > best.capacity-best.inflight {
			best = s
		}
	}
	if best == nil {
		return errNoWorker
	}
	t.Lease.TaskId = c.ID
	b.previews[c.ID] = &preview{id: c.ID, epoch: t.GetLease().GetEpoch(), kind: c.Kind, version: c.Version,
		namespace: t.GetResource().GetNamespace(), session: best, deadline: t.GetDeadline().AsTime()}
	best.send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Tasks{Tasks: &convergev1.Tasks{Tasks: []*convergev1.Task{t}}}})
	return ""
}

// forgetLatePreviews drops the previews whose plan stopped waiting (a
// worker that never answers, e.g. one that could not queue the task).
func (b *Broker) forgetLatePreviews(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id, p := range b.previews {
		if now.After(p.deadline.Add(b.cfg.DeadlineGrace)) {
			delete(b.previews, id)
		}
	}
}

// isPreview reports whether a lease may name a preview, by its id alone,
// so that a real task's result or chunk costs no second look-up under b.mu.
func isPreview(l *convergev1.Lease) bool { return l.GetTaskId() >= store.FirstPreviewID }

// previewOf returns the preview a lease names, if s holds it. Callers
// hold b.mu.
func (b *Broker) previewOf(s *session, l *convergev1.Lease) *preview {
	p := b.previews[l.GetTaskId()]
	if p == nil || p.epoch != l.GetEpoch() || p.session != s {
		return nil
	}
	return p
}

// onPreviewChunk buffers a part of a preview's composition; it reports
// whether the chunk was a preview's.
func (b *Broker) onPreviewChunk(s *session, c *convergev1.ComposeChunk) bool {
	if !isPreview(c.GetLease()) {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.previewOf(s, c.GetLease())
	if p == nil {
		return false
	}
	if int(c.GetIndex()) != len(p.parts) {
		if c.GetIndex() != 0 {
			p.overflow = true
			return true
		}
		p.parts, p.children, p.overflow = nil, 0, false
	}
	p.children += len(c.GetPart().GetChildren())
	if p.children > limits.MaxChildren {
		p.overflow, p.parts = true, nil
	}
	if !p.overflow {
		p.parts = append(p.parts, c.GetPart())
	}
	return true
}

// onPreviewResult hands a preview's result back to its plan, checked as
// the applier would check it but never applied; it reports whether the
// result was a preview's.
func (b *Broker) onPreviewResult(s *session, r *convergev1.TaskResult) bool {
	if !isPreview(r.GetLease()) {
		return false
	}
	b.mu.Lock()
	p := b.previewOf(s, r.GetLease())
	if p != nil {
		delete(b.previews, p.id)
	}
	b.mu.Unlock()
	if p == nil {
		return false
	}
	s.send(ack(r.GetLease(), false, "a preview: its result went to the plan that asked for it and is never applied"))
	answer := store.PreviewAnswer{ID: p.id, Worker: s.name}
	whole, why := b.previewComposition(p, r)
	if why == "" {
		if e := b.kinds.Get(p.kind, p.version); e != nil {
			whole, why = b.sealPreview(e, whole)
		}
	}
	if why != "" {
		answer.Error = why
	} else if answer.Result, why = encodeResult(whole); why != "" {
		answer.Error = why
	}
	b.answerPreview(answer)
	return true
}

// previewComposition checks a preview's composition as compositionOf
// checks a real one, and returns the result with its parts joined into
// one composition; a result that composes nothing is returned as it is.
func (b *Broker) previewComposition(p *preview, r *convergev1.TaskResult) (*convergev1.TaskResult, string) {
	ok := r.GetSuccess()
	if ok == nil {
		if len(p.parts) > 0 {
			return nil, "the worker sent composition chunks and then a failure"
		}
		return r, ""
	}
	if ok.GetComposition() == nil && len(p.parts) == 0 {
		return r, ""
	}
	e := b.kinds.Get(p.kind, p.version)
	if e == nil {
		return nil, fmt.Sprintf("kind %s v%d is not registered any more", p.kind, p.version)
	}
	if _, why := b.compositionOf(e, &lease{parts: p.parts, overflow: p.overflow, namespace: p.namespace}, ok, store.Outcome{}); why != "" {
		return nil, "the composition would be refused: " + why
	}
	whole := &convergev1.Composition{}
	for _, part := range append(append([]*convergev1.Composition(nil), p.parts...), ok.GetComposition()) {
		whole.Children = append(whole.Children, part.GetChildren()...)
		whole.Edges = append(whole.Edges, part.GetEdges()...)
		whole.References = append(whole.References, part.GetReferences()...)
	}
	merged := proto.CloneOf(ok)
	merged.Composition, merged.ComposeChunks = whole, 0
	return &convergev1.TaskResult{Lease: r.GetLease(), Outcome: &convergev1.TaskResult_Success{Success: merged}}, ""
}

func encodeResult(r *convergev1.TaskResult) ([]byte, string) {
	raw, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Sprintf("encoding the result: %v", err)
	}
	return raw, ""
}

// answerPreview records an answer and wakes the plan call waiting for it.
func (b *Broker) answerPreview(a store.PreviewAnswer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.store.AnswerPreview(ctx, a); err != nil {
		b.log.Warn("recording a preview's answer failed; the plan times out on it", "preview", a.ID, "err", err)
		return
	}
	b.bus.Publish(notify.Previews)
}

// unclaimPreviews gives back the previews a departing worker held, so
// another worker can answer them before the plan gives up.
func (b *Broker) unclaimPreviews(s *session) {
	b.mu.Lock()
	var ids []int64
	for id, p := range b.previews {
		if p.session == s {
			ids = append(ids, id)
			delete(b.previews, id)
		}
	}
	b.mu.Unlock()
	b.givePreviewsBack(ids)
}

// givePreviewsBack makes previews claimable again by any broker.
func (b *Broker) givePreviewsBack(ids []int64) {
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.store.UnclaimPreviews(ctx, ids); err != nil {
		b.log.Warn("giving back previews failed; their plans time out on them", "err", err)
		return
	}
	b.bus.Publish(notify.Previews)
}
