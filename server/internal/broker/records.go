package broker

import (
	"github.com/convergehq/converge/server/internal/metrics"
	"github.com/convergehq/converge/server/internal/store"
)

// staleLease is the ack reason of a result whose lease the store no
// longer holds.
const staleLease = "the lease is no longer current"

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
