// Package api serves ControlService: kinds, resources, events and the
// Watch stream, over Connect, gRPC, gRPC-Web and REST+JSON.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/server/internal/admission"
	"github.com/convergehq/converge/server/internal/authz"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/readroute"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

// Service implements convergev1connect.ControlServiceHandler.
type Service struct {
	store   *store.Store
	kinds   *kinds.Registry
	bus     *notify.Bus
	members *members.Tracker
	log     *slog.Logger
	// flows compiles value flows for the gate a plan runs.
	flows *flow.Cache
	// onLogLevel applies a level SetLogLevel stored to this replica.
	onLogLevel func(context.Context)
	// admission bounds the reconciles applies may queue per kind (nil:
	// none).
	admission *admission.Gate
	// reads routes Watch's pages to a read replica; nil reads the primary.
	reads *readroute.Router
}

// Admit sets the admission gate applies pass through.
func (s *Service) Admit(g *admission.Gate) { s.admission = g }

// RouteReads has Watch read its feed where reads routes it (the unary
// reads are routed by reads' interceptor).
func (s *Service) RouteReads(reads *readroute.Router) { s.reads = reads }

// ReadRouter is the interceptor that routes the unary reads and hands
// writes their read-your-writes tokens; it passes everything through
// until RouteReads gives it a replica. It must be the innermost, after
// authorization, so that only the handler runs on the replica.
func (s *Service) ReadRouter() connect.Interceptor { return s.reads.Interceptor() }

// New returns the service.
func New(st *store.Store, reg *kinds.Registry, bus *notify.Bus, mem *members.Tracker, log *slog.Logger) *Service {
	return &Service{store: st, kinds: reg, bus: bus, members: mem, log: log, flows: flow.NewCache(1024)}
}

// isParked reports whether no live replica has a worker ready for the
// reaction a trigger runs, and why connected ones are not ready, if any.
func (s *Service) isParked(kind string, version int32, trigger string) (reaction string, parked bool, notReady string) {
	e := s.kinds.Get(kind, version)
	if e == nil {
		return "", false, ""
	}
	r, ok := e.Reaction(trigger)
	if !ok {
		return trigger, true, ""
	}
	ready, why := s.members.Serves(kind, version, r.Name)
	return r.Name, !ready, why
}

// actor names who made a request, for events: the caller's verified
// identity (SPIFFE ID or bearer token identity) when there is one, else
// the peer address.
func actor(ctx context.Context) string {
	if id, ok := authz.CallerFrom(ctx); ok {
		return "api:" + id
	}
	if p, ok := tlsconf.PeerFrom(ctx); ok && p.ID != "" {
		return "api:" + p.ID
	}
	if ci, ok := connect.CallInfoForHandlerContext(ctx); ok && ci.Peer().Addr != "" {
		return "api:" + ci.Peer().Addr
	}
	return "api"
}

// storeError maps store errors to API errors; the message already names
// what went wrong.
func storeError(err error) error {
	var ce *connect.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ce
	case errors.Is(err, store.ErrNotFound):
		return connect.NewError(connect.CodeNotFound, errors.New(trimSentinel(err, store.ErrNotFound)))
	case errors.Is(err, store.ErrConflict):
		return connect.NewError(connect.CodeFailedPrecondition, errors.New(trimSentinel(err, store.ErrConflict)))
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeCanceled, err)
	case store.IsUnavailable(err):
		return connect.NewError(connect.CodeUnavailable, fmt.Errorf("database unavailable: %w", err))
	}
	return connect.NewError(connect.CodeInternal, err)
}

// retryStaleKind runs write, which checks a request against this
// replica's kinds and then commits it. The store refuses a commit checked
// against a kind version that has changed since (store.ErrStaleKind);
// retryStaleKind then refreshes the kinds and runs write once more, with
// first false, and answers a second refusal with staleKindError. Any other
// error, or nil, comes back as write returned it.
func (s *Service) retryStaleKind(ctx context.Context, write func(first bool) error) error {
	for first := true; ; first = false {
		err := write(first)
		if !errors.Is(err, store.ErrStaleKind) {
			return err
		}
		if !first {
			return staleKindError(err)
		}
		if err := s.kinds.Refresh(ctx); err != nil {
			return storeError(err)
		}
	}
}

// staleKindError tells the client its request met a kind that kept
// changing under it, and that trying again is safe.
func staleKindError(err error) error {
	return connect.NewError(connect.CodeAborted, fmt.Errorf("%v; retry the request", err))
}

// trimSentinel drops the "not found: " style prefix the store adds.
func trimSentinel(err, sentinel error) string {
	msg := err.Error()
	prefix := sentinel.Error() + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}

func invalid(format string, args ...any) error {
	return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
}
