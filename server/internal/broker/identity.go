package broker

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/tlsconf"
)

// authorize binds the session to the caller's verified identity and
// refuses the subscription if it names a registered kind whose manifest
// lists the worker identities allowed to serve it (workers) without the
// caller's SPIFFE ID. Without TLS there is no verified identity, and
// nothing is checked. Kinds registered later are checked at dispatch:
// session.ready asks s.permit.
func (b *Broker) authorize(ctx context.Context, s *session) error {
	peer, ok := tlsconf.PeerFrom(ctx)
	if !ok {
		return nil
	}
	s.permit = func(rk reactionKey) bool { return b.permits(peer, rk) }
	for rk := range s.serves {
		if b.permits(peer, rk) {
			continue
		}
		who := fmt.Sprintf("SPIFFE ID %q", peer.ID)
		if peer.ID == "" {
			who = "a worker without a SPIFFE ID"
		}
		return connect.NewError(connect.CodePermissionDenied,
			fmt.Errorf("%s may not serve kind %s v%d: not in the manifest's workers list", who, rk.kind, rk.version))
	}
	return nil
}

// permits reports whether peer may serve rk's kind: the kind is not
// registered (yet), its manifest lists no workers, or lists peer's ID.
func (b *Broker) permits(peer tlsconf.Peer, rk reactionKey) bool {
	e := b.kinds.Get(rk.kind, rk.version)
	if e == nil || e.Compiled == nil {
		return true
	}
	allowed := e.Compiled.Manifest.GetWorkers()
	return len(allowed) == 0 || tlsconf.Matches(allowed, peer.ID)
}
