package tlsconf

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
)

// Audiences: who a listener path serves.
const (
	// AudienceAPI is the control API: ControlService, REST and OpenAPI.
	AudienceAPI = "api"
	// AudienceWorker is WorkerService, the endpoint workers dial.
	AudienceWorker = "worker"
)

// Peer is what the TLS handshake established about a caller.
type Peer struct {
	// ID is the SPIFFE ID of the verified client certificate, or "" if
	// the caller presented no certificate or one without a SPIFFE ID.
	ID string
}

type peerKey struct{}

// PeerFrom returns the caller's verified identity. ok is false when the
// request did not come over a TLS listener guarded by this package.
func PeerFrom(ctx context.Context) (p Peer, ok bool) {
	p, ok = ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// WithPeer returns ctx carrying p, as Guard sets it; for tests of handlers
// that read PeerFrom.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

var errorWriter = connect.NewErrorWriter()

// Guard admits requests to next whose caller's SPIFFE ID is on allow,
// and puts the caller's Peer in the request context. Others get
// PermissionDenied in the protocol they spoke (Connect, gRPC, gRPC-Web),
// or HTTP 403 with a JSON error for REST and plain HTTP. Requests that did
// not arrive over TLS pass unchanged: the listener decides whether TLS is
// on, not the path.
func Guard(audience string, allow Allowlist, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			next.ServeHTTP(w, r)
			return
		}
		var p Peer
		if len(r.TLS.PeerCertificates) > 0 {
			p.ID = SPIFFEID(r.TLS.PeerCertificates[0])
		}
		if !allow.Allows(p.ID) {
			deny(w, r, audience, p.ID)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithPeer(r.Context(), p)))
	})
}

func deny(w http.ResponseWriter, r *http.Request, audience, id string) {
	who := fmt.Sprintf("SPIFFE ID %q", id)
	if id == "" {
		who = "a caller without a SPIFFE ID (no client certificate, or no spiffe:// URI SAN)"
	}
	err := connect.NewError(connect.CodePermissionDenied,
		fmt.Errorf("%s is not allowed for the %s audience (see --allow-%s-ids)", who, audience, audience))
	if errorWriter.IsSupported(r) {
		_ = errorWriter.Write(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": connect.CodePermissionDenied.String(), "message": err.Message()})
}

// Allowlist is the allowlist of audience (AudienceAPI or AudienceWorker);
// a nil Server has empty ones.
func (s *Server) Allowlist(audience string) Allowlist {
	switch {
	case s == nil:
		return Allowlist{}
	case audience == AudienceWorker:
		return s.Worker
	default:
		return s.API
	}
}
