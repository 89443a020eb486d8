package broker

import (
	"context"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// configLoop pushes changed default provider configs to the workers of
// their kinds: the registry reloads them (with the kinds) on any change.
func (b *Broker) configLoop(ctx context.Context) {
	changed, stop := b.kinds.Subscribe()
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		b.mu.Lock()
		sessions := make([]*session, 0, len(b.sessions))
		for s := range b.sessions {
			sessions = append(sessions, s)
		}
		b.mu.Unlock()
		for _, s := range sessions {
			b.pushConfigs(s)
		}
	}
}

// pushConfigs sends s the default configs of the kind versions it serves
// that it has not seen at their current revision: all of them on the
// first call for a stream (an empty config when a kind has none).
func (b *Broker) pushConfigs(s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.closed {
		return
	}
	seen := map[kindKey]bool{}
	var out []*convergev1.KindConfig
	for rk := range s.serves {
		k := kindKey{rk.kind, rk.version}
		if seen[k] {
			continue
		}
		seen[k] = true
		config, rev := b.kinds.DefaultConfig(k.kind, k.version)
		if last, sent := s.configs[k]; sent && last == rev {
			continue
		}
		s.configs[k] = rev
		out = append(out, &convergev1.KindConfig{Kind: k.kind, KindVersion: k.version, Config: config, Revision: rev})
	}
	if len(out) > 0 {
		s.send(&convergev1.ServerMessage{Msg: &convergev1.ServerMessage_Configs{Configs: &convergev1.Configs{Configs: out}}})
	}
}

// onReadiness records which reactions the worker can serve now. Tasks
// for a reaction it is not ready for wait in the queue (parked) until it,
// or another worker, is.
func (b *Broker) onReadiness(s *session, r *convergev1.Readiness) {
	b.mu.Lock()
	for _, rr := range r.GetReactions() {
		ref := rr.GetReaction()
		rk := reactionKey{ref.GetKind(), ref.GetKindVersion(), ref.GetReaction()}
		if !s.serves[rk] {
			continue
		}
		if rr.GetReady() {
			delete(s.notReady, rk)
			continue
		}
		reason := rr.GetReason()
		if reason == "" {
			reason = "the worker reported it not ready"
		}
		s.notReady[rk] = reason
	}
	b.drainPending(s)
	b.mu.Unlock()
	b.releaseStranded(context.Background())
	b.wakeClaimer()
	b.notifyServed()
}
