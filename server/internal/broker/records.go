package broker

import (
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/taskrec"
)

// staleLease is the ack reason of a result whose lease the store no
// longer holds.
const staleLease = "the lease is no longer current"

// startRecord begins the record of a claimed task about to be sent as
// task. The record takes each part in its stored form, as the claim read
// it (and the config as the registry loaded it), never from the message
// to the worker: the message is the place values may be made clear for
// the worker alone. task only says which parts the worker gets.
func (b *Broker) startRecord(c store.Claimed, task *convergev1.Task, now time.Time) *taskrec.Pending {
	if b.cfg.Records == nil {
		return nil
	}
	in := taskrec.Input{KindVersion: c.Version, Reaction: task.GetReaction(),
		Config: b.kinds.EffectiveConfig(c.Kind, c.Version, c.ProviderConfig)}
	if task.GetResource() != nil {
		in.Spec, in.Status, in.Labels = c.Spec, c.Status, c.Labels
	}
	switch {
	case task.GetOperation() != nil:
		in.Operation = c.Payload
	case task.GetReactor() != nil:
		in.Reactor = c.Payload
	}
	return b.cfg.Records.Start(c, in, now)
}

// record ends a result's task record: applied, or discarded by the fence
// with the reason the worker's ack gives, prefixed by a code.
func (b *Broker) record(r *result, applied bool, outcome metrics.Outcome, reason string) {
	if applied {
		b.cfg.Records.Finish(r.lease.rec, r.out, store.RecordApplied, "")
		return
	}
	code := "ApplyFailed"
	switch {
	case outcome == metrics.Superseded:
		code = "Superseded"
	case reason == staleLease:
		code = "StaleLease"
	}
	b.cfg.Records.Finish(r.lease.rec, r.out, store.RecordDiscarded, code+": "+reason)
}
