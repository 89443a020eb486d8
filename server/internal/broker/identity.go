package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/tlsconf"
)

// errNoIdentity refuses a worker that proves no identity while
// authorization is on: its tasks carry specs and provider configs that
// only workers the operator named may receive.
var errNoIdentity = errors.New("authorization is on, so a worker must identify itself: connect with a bearer token from " +
	"--token-file (the SDKs and stdworker read it from $CONVERGE_TOKEN or --token-file) or with a verified client certificate")

// workerIdentity is who a worker is: its verified SPIFFE ID, else the
// identity of its bearer token under the server's authorization policy.
// checked is false when there is nothing to check the kinds' workers
// lists against (no TLS and no authorization: a development setup).
func (b *Broker) workerIdentity(ctx context.Context, header http.Header) (id string, checked bool, err error) {
	peer, tls := tlsconf.PeerFrom(ctx)
	id, err = b.cfg.Authz.Identify(peer.ID, header.Get("Authorization"))
	if err != nil {
		return "", false, err
	}
	if id == "" && b.cfg.Authz.Enabled() {
		return "", false, connect.NewError(connect.CodeUnauthenticated, errNoIdentity)
	}
	return id, tls || id != "", nil
}

// authorize binds the session to the worker's identity and refuses the
// subscription if it names a registered kind whose manifest lists the
// worker identities allowed to serve it (workers) without this one. A
// SPIFFE ID and a bearer token's identity are held to the list alike.
// Kinds registered later are checked at dispatch: session.ready asks
// s.permit.
func (b *Broker) authorize(s *session, id string, checked bool) error {
	if !checked {
		return nil
	}
	s.identity = id
	s.permit = func(rk reactionKey) bool { return b.permits(id, rk) }
	for rk := range s.serves {
		if b.permits(id, rk) {
			continue
		}
		who := fmt.Sprintf("worker identity %q", id)
		if id == "" {
			who = "a worker without a SPIFFE ID"
		}
		return connect.NewError(connect.CodePermissionDenied,
			fmt.Errorf("%s may not serve kind %s v%d: not in the manifest's workers list", who, rk.kind, rk.version))
	}
	return nil
}

// permits reports whether the worker identity id may serve rk's kind: the
// kind is not registered (yet), its manifest lists no workers, or lists id.
func (b *Broker) permits(id string, rk reactionKey) bool {
	e := b.kinds.Get(rk.kind, rk.version)
	if e == nil || e.Compiled == nil {
		return true
	}
	allowed := e.Compiled.Manifest.GetWorkers()
	return len(allowed) == 0 || tlsconf.Matches(allowed, id)
}
