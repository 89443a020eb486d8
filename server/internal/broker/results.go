package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/storable"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// result is an outcome waiting to be applied, and whom to acknowledge.
type result struct {
	lease   *lease
	session *session
	echo    *convergev1.Lease
	out     store.Outcome
	// comp is a composer's answer, applied in a transaction of its own.
	comp *store.Composition
}

// onResult accepts a worker's result for a lease this broker holds.
func (b *Broker) onResult(s *session, r *convergev1.TaskResult) {
	if b.onPreviewResult(s, r) {
		return
	}
	pl := r.GetLease()
	b.mu.Lock()
	l := b.heldBy(s, pl)
	if l == nil {
		b.mu.Unlock()
		s.send(ack(pl, false, "the lease is not current, or not this worker's: the task was reassigned, finished or never given to it"))
		return
	}
	l.done = true
	if l.session != nil {
		l.session.inflight--
	}
	b.drainPending(s)
	e := b.kinds.Get(l.key.kind, l.key.version)
	b.mu.Unlock()
	b.wakeClaimer()

	if e != nil && e.Revision != l.revision {
		// The manifest changed while the task ran, so the result answers
		// the old contract: discard it and run the task again.
		b.forget(l)
		why := fmt.Sprintf("kind %s v%d changed while the task ran (revision %d, now %d); the task runs again",
			e.Kind, e.Version, l.revision, e.Revision)
		l.rec.Returned(recorded(r, store.Outcome{}, e), nil)
		b.cfg.Records.Finish(l.rec, store.Outcome{}, store.RecordDiscarded, "KindChanged: "+why)
		s.send(ack(pl, false, why))
		return
	}
	out, comp := b.outcome(s, l, e, r)
	l.rec.Returned(recorded(r, out, e), comp)
	b.results <- &result{lease: l, session: s, echo: pl, out: out, comp: comp}
}

// heldBy returns the lease pl names if it is current and s runs it: not
// reassigned, not finished, not another worker's. Only such a lease's
// messages count. Callers hold b.mu.
func (b *Broker) heldBy(s *session, pl *convergev1.Lease) *lease {
	l := b.leases[pl.GetTaskId()]
	if l == nil || l.Epoch != pl.GetEpoch() || l.done || l.session != s {
		return nil
	}
	return l
}

// forget drops a lease and gives its task back to the queue at once.
func (b *Broker) forget(l *lease) {
	b.mu.Lock()
	if b.leases[l.TaskID] == l {
		delete(b.leases, l.TaskID)
	}
	abandonTask(l, "released: runs again")
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := b.store.ReleaseLeases(ctx, []store.Lease{l.Lease}); err != nil {
		b.log.Warn("could not release a task; it runs again after the lease window", "task", l.TaskID, "err", err)
	}
	b.bus.Publish(notify.Tasks)
}

// outcome turns a worker result into what the store applies, enforcing
// the kind's contract: only emitted parts are applied, and a status must
// conform to the kind's status schema.
func (b *Broker) outcome(s *session, l *lease, e *kinds.Entry, r *convergev1.TaskResult) (store.Outcome, *store.Composition) {
	out := store.Outcome{
		Lease: store.Lease{TaskID: l.TaskID, Epoch: l.Epoch, Generation: r.GetLease().GetGeneration()},
		Actor: s.actor,
	}
	fail := func(format string, args ...any) (store.Outcome, *store.Composition) {
		out.Status, out.Conditions = nil, nil
		out.Failed, out.Terminal, out.Message = true, true, fmt.Sprintf(format, args...)
		return out, nil
	}
	if path, why := storable.Message(r); why != "" {
		return fail("the result cannot be stored: %s: %s", path, why)
	}
	if f := r.GetError(); f != nil {
		// The protocol's rules (checked on receipt) bound the reason's
		// syntax and the retry-after's range, and refuse a retry-after on
		// a terminal failure.
		out.Failed, out.Terminal, out.Message, out.Reason = true, f.GetTerminal(), f.GetMessage(), f.GetReason()
		if f.GetRetryAfter() != nil {
			out.RetryAfter = f.GetRetryAfter().AsDuration()
		}
		if out.Message == "" {
			out.Message = "the worker reported a failure without a message"
		}
		return out, nil
	}
	if e == nil {
		return fail("kind %s v%d is no longer registered", l.key.kind, l.key.version)
	}
	reaction, _ := e.Reaction(l.key.trigger)
	ok := r.GetSuccess()
	switch l.key.trigger {
	case trigger.SpecChange, trigger.Resync, trigger.ChildrenSettled:
		out.ResyncAfter = e.ResyncInterval()
	case trigger.Observe:
		out.ResyncAfter = e.ObserveInterval()
	}
	if reaction.Emits[manifest.EmitOperationOutput] {
		output, err := operationOutput(ok.GetOperationOutput())
		if err != nil {
			return fail("operation output: %v", err)
		}
		out.Output = output
	}
	if reaction.Emits["status"] {
		if st := ok.GetStatus(); len(st) > 0 {
			if len(st) > limits.MaxStatusBytes {
				return fail("status is %d bytes; the limit is %d", len(st), limits.MaxStatusBytes)
			}
			doc, err := schema.Decode(st)
			if err != nil {
				return fail("status is not valid JSON: %v", err)
			}
			if _, isObject := doc.(map[string]any); !isObject {
				return fail("status must be a JSON object")
			}
			if path, why := storable.JSON(doc, "status"); why != "" {
				return fail("%s: %s", path, why)
			}
			invalid := e.ValidateStatus(doc) // in the clear, before sealOutput seals doc
			sealed, why := b.sealOutput(e.Compiled.Status, st, doc)
			if why != "" {
				return fail("status %s", why)
			}
			if invalid != nil {
				// The status is not served, but it is what the handler says
				// it made: kept for the tasks that follow (a teardown above
				// all), so nothing it created is lost.
				rejected, _ := fail("status does not conform to the status_schema of %s v%d: %v", e.Kind, e.Version, invalid)
				rejected.RejectedStatus = sealed
				return rejected, nil
			}
			out.Status = sealed
		}
		out.Unhealthy = ok.GetUnhealthy()
	}
	if reaction.Emits["conditions"] {
		conds, err := encodeConditions(ok.GetConditions())
		if err != nil {
			return fail("conditions: %v", err)
		}
		out.Conditions = conds
	}
	if reaction.Emits["children"] && (l.key.trigger == trigger.SpecChange || l.key.trigger == trigger.Resync) {
		if ok.GetComposition() == nil && len(l.parts) == 0 {
			return fail("reaction %q emits children but the result has no composition", reaction.Name)
		}
		comp, msg := b.compositionOf(e, l, ok, out)
		if msg != "" {
			return fail("%s", msg)
		}
		return out, &comp
	}
	return out, nil
}

// operationOutput checks an operation's output: a JSON object (empty
// means {}) within the status size limit.
func operationOutput(raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return []byte("{}"), nil
	}
	if len(raw) > limits.MaxStatusBytes {
		return nil, fmt.Errorf("%d bytes; the limit is %d", len(raw), limits.MaxStatusBytes)
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if _, isObject := doc.(map[string]any); !isObject {
		return nil, fmt.Errorf("must be a JSON object")
	}
	if path, why := storable.JSON(doc, ""); why != "" {
		return nil, fmt.Errorf("%s: %s", path, why)
	}
	return raw, nil
}

func encodeConditions(cs []*convergev1.Condition) ([]byte, error) {
	list := make([]json.RawMessage, 0, len(cs))
	seen := map[string]bool{}
	for _, c := range cs {
		if seen[c.GetType()] {
			return nil, fmt.Errorf("condition type %q is reported twice", c.GetType())
		}
		seen[c.GetType()] = true
		plain := &convergev1.Condition{Type: c.GetType(), Status: c.GetStatus(), Reason: c.GetReason(), Message: c.GetMessage()}
		raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(plain)
		if err != nil {
			return nil, err
		}
		list = append(list, raw)
	}
	return json.Marshal(list)
}

func ack(l *convergev1.Lease, applied bool, reason string) *convergev1.ServerMessage {
	return &convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Acks{Acks: &convergev1.Acks{
		Acks: []*convergev1.ResultAck{{Lease: l, Applied: applied, Reason: reason}},
	}}}
}

// applyLoop applies results in batches: whatever arrived while the
// previous batch was being written goes into the next one.
func (b *Broker) applyLoop(ctx context.Context) {
	for {
		var batch []*result
		select {
		case <-ctx.Done():
			return
		case r := <-b.results:
			batch = append(batch, r)
		}
	fill:
		for len(batch) < b.cfg.ApplyBatch {
			select {
			case r := <-b.results:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		var plain, comps []*result
		for _, r := range batch {
			if r.comp != nil {
				comps = append(comps, r)
			} else {
				plain = append(plain, r)
			}
		}
		for _, r := range comps {
			actx, span := startApply(ctx, r.lease)
			b.applyComposition(actx, r)
			endSpans([]trace.Span{span})
		}
		if len(plain) == 0 {
			continue
		}
		outs := make([]store.Outcome, len(plain))
		for i, r := range plain {
			outs[i] = r.out
		}
		actx, spans := applyContext(ctx, plain)
		res, err := b.applyWithRetry(actx, outs)
		endSpans(spans)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.log.Error("applying results failed; the tasks will run again", "results", len(outs), "err", err)
		}
		b.finish(plain, res)
	}
}

// applyComposition applies a composer's answer in its own transaction. If
// the store refuses it (a name taken, a reference missing, a kind that
// changed), the refusal is applied as the task's failure instead.
func (b *Broker) applyComposition(ctx context.Context, r *result) {
	wait := 50 * time.Millisecond
	var res store.ComposeResult
	var err error
	for {
		res, err = b.store.ApplyComposition(ctx, *r.comp)
		if err == nil || !store.IsUnavailable(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
	if err != nil {
		b.log.Error("applying a composition failed; the task will run again", "task", r.lease.TaskID, "err", err)
		b.finish([]*result{r}, nil)
		return
	}
	if res.Refused != nil {
		r.comp = nil
		r.out = store.Outcome{Lease: r.out.Lease, Actor: r.out.Actor, Failed: true, Terminal: res.Refused.Terminal, Message: res.Refused.Message}
		out, err := b.applyWithRetry(ctx, []store.Outcome{r.out})
		if err != nil {
			b.log.Error("applying a refused composition's failure failed", "task", r.lease.TaskID, "err", err)
		}
		b.finish([]*result{r}, out)
		return
	}
	b.finish([]*result{r}, []store.OutcomeResult{res.OutcomeResult})
	b.bus.Publish(notify.Tasks)
}

// applyWithRetry keeps trying while the database is unreachable: results
// are not lost to a database restart.
func (b *Broker) applyWithRetry(ctx context.Context, outs []store.Outcome) ([]store.OutcomeResult, error) {
	wait := 50 * time.Millisecond
	for {
		res, err := b.store.ApplyOutcomes(ctx, outs, b.cfg.Backoff)
		if err == nil || !store.IsUnavailable(err) || ctx.Err() != nil {
			return res, err
		}
		b.log.Warn("database unavailable while applying results; retrying", "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// finish acknowledges applied results and forgets their leases.
func (b *Broker) finish(batch []*result, res []store.OutcomeResult) {
	b.mu.Lock()
	for i, r := range batch {
		if cur := b.leases[r.lease.TaskID]; cur == r.lease {
			delete(b.leases, r.lease.TaskID)
		}
		applied, reason := false, "the result could not be applied"
		outcome := metrics.Stale
		if res != nil {
			switch {
			case res[i].Applied:
				applied, reason = true, ""
				outcome = outcomeOf(r.out, res[i])
				b.logFailure(r)
				if !res[i].RetryAt.IsZero() {
					select {
					case b.retryAt <- res[i].RetryAt:
					default:
					}
				}
			case res[i].Superseded:
				outcome = metrics.Superseded
				reason = "the resource changed while the task ran; it runs again at the new generation"
			default:
				reason = staleLease
			}
		}
		endTask(r.lease, r.out, applied, reason)
		b.cfg.Metrics.Completed(r.lease.key.kind, outcome, reasonOf(r.out, outcome))
		b.record(r, applied, outcome, reason)
		if r.echo != nil && !r.session.closed {
			r.session.send(ack(r.echo, applied, reason))
		}
	}
	b.mu.Unlock()
	b.bus.Publish(notify.Changes)
	// Applying results may have queued work: a requeued task, or (by the
	// database's triggers) a rollup, a gate or a teardown.
	b.bus.Publish(notify.Tasks)
}

// logFailure logs an applied failure once, naming the attempt; the
// worker's SDK logs it on its side too.
func (b *Broker) logFailure(r *result) {
	if !r.out.Failed {
		return
	}
	level := slog.LevelWarn
	if r.out.Terminal {
		level = slog.LevelError
	}
	worker, session := "", ""
	if r.session != nil {
		worker, session = r.session.name, r.session.id
	}
	attrs := []any{"kind", r.lease.key.kind, "version", r.lease.key.version,
		"trigger", r.lease.key.trigger, "namespace", r.lease.namespace, "name", r.lease.name,
		"generation", r.out.Lease.Generation, "attempt", r.lease.attempt, "terminal", r.out.Terminal,
		"reason", r.out.Reason, "worker", worker, "session", session, "err", r.out.Message}
	if id := traceID(r.lease); id != "" {
		attrs = append(attrs, "trace_id", id)
	}
	b.log.Log(context.Background(), level, "task failed", attrs...)
}

// reasonOf is the reason label of an outcome: the worker's code for an
// applied failure, "" otherwise.
func reasonOf(o store.Outcome, outcome metrics.Outcome) string {
	if outcome != metrics.Transient && outcome != metrics.Terminal {
		return ""
	}
	return o.Reason
}

// outcomeOf classifies an applied outcome for the completions metric. A
// transient failure that exhausted its attempts was applied as terminal:
// only a failure given a retry time counts as transient.
func outcomeOf(o store.Outcome, res store.OutcomeResult) metrics.Outcome {
	switch {
	case !o.Failed:
		return metrics.Success
	case !o.Terminal && !res.RetryAt.IsZero():
		return metrics.Transient
	}
	return metrics.Terminal
}

func decodeLabels(raw []byte) map[string]string {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]string
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
