package readroute

import (
	"context"
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
)

// ReadProcedures are the API's read-only procedures that a replica may
// serve: resources (get, list, counts, tree, graph, explain, history),
// events, operations and rollouts, which is everything the UI reads but
// the cluster view, kinds, provider configs and task records. Those stay
// on the primary: kinds and configs are few and small; the cluster view
// is the members table, which replicas heartbeat on the primary; and task
// records are an UNLOGGED table, which never reaches a standby (reading
// it there fails). Watch routes each page through a Stream. Every
// procedure not listed is served by the primary.
var ReadProcedures = map[string]bool{
	convergev1connect.ControlServiceGetResourceProcedure:        true,
	convergev1connect.ControlServiceListResourcesProcedure:      true,
	convergev1connect.ControlServiceCountResourcesProcedure:     true,
	convergev1connect.ControlServiceGetResourceTreeProcedure:    true,
	convergev1connect.ControlServiceGetResourceGraphProcedure:   true,
	convergev1connect.ControlServiceExplainResourceProcedure:    true,
	convergev1connect.ControlServiceGetResourceHistoryProcedure: true,
	convergev1connect.ControlServiceListEventsProcedure:         true,
	convergev1connect.ControlServiceGetOperationProcedure:       true,
	convergev1connect.ControlServiceListOperationsProcedure:     true,
	convergev1connect.ControlServiceGetRolloutProcedure:         true,
	convergev1connect.ControlServiceListRolloutsProcedure:       true,
}

// Interceptor routes the unary ReadProcedures (Do, with the request's
// token) and answers every other successful unary call, a write, with the
// token of the primary's position after it; a read the primary served
// gets one too, so that a client's reads never go back in time when the
// next one is served by the replica (which, alone, only moves forward). A nil Router, or one without
// a replica, passes everything through: there is nothing to route, and
// no token to hand out.
func (r *Router) Interceptor() connect.Interceptor { return interceptor{r} }

type interceptor struct{ r *Router }

func (i interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	if i.r == nil || i.r.cfg.Replica == nil {
		return next
	}
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		if ReadProcedures[req.Spec().Procedure] {
			need, err := ParseToken(req.Header().Get(Header))
			if err != nil {
				return nil, connect.NewError(connect.CodeInvalidArgument, err)
			}
			var resp connect.AnyResponse
			onPrimary, err := i.r.do(ctx, need, func(ctx context.Context) error {
				var err error
				resp, err = next(ctx, req)
				return err
			})
			if err == nil && resp != nil && onPrimary {
				// The primary is ahead of the replica: the caller's next
				// read must not show it less than this one did.
				i.r.issueToken(ctx, req.Spec().Procedure, resp.Header())
			}
			return resp, err
		}
		resp, err := next(ctx, req)
		if err == nil && resp != nil {
			i.r.issueToken(ctx, req.Spec().Procedure, resp.Header())
		}
		return resp, err
	}
}

// issueToken answers a call that has just written, or read the primary,
// with the token of the primary's position now: whatever the call wrote or
// saw is at or before it.
func (r *Router) issueToken(ctx context.Context, procedure string, header http.Header) {
	if lsn, err := r.PrimaryAfter(ctx, time.Now()); err == nil {
		header.Set(Header, Token(lsn))
	} else {
		r.cfg.Log.Debug("read-your-writes token not issued", "procedure", procedure, "err", err)
	}
}

func (i interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// Stream routes the reads of one Watch stream, page by page: each runs
// where Do puts it, after the stream's token and, following a wake-up,
// after the primary's position when it woke. Pages may alternate between
// replica and primary without losing or reordering a change: the feed
// hands out only changes of transactions older than every transaction its
// snapshot sees running (its xmin), and a hot standby's snapshot counts as
// running every transaction it has not seen finish, those it has not yet
// seen start included (they are past its xmax). So every change below a
// standby's xmin is visible there, and a cursor taken on either side never
// passes a change the other has yet to show: a lagging side just returns
// nothing new until it catches up. A nil *Stream runs every read as it is.
type Stream struct {
	r    *Router
	need uint64
}

// Stream starts routing a Watch whose request carried header. A nil
// Router, or one without a replica, returns a nil *Stream.
func (r *Router) Stream(header http.Header) (*Stream, error) {
	if r == nil || r.cfg.Replica == nil {
		return nil, nil
	}
	need, err := ParseToken(header.Get(Header))
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return &Stream{r: r, need: need}, nil
}

// Woke tells the stream the primary notified a change: the next read
// waits (within Wait) for the replica to replay past the primary's
// position now, so the change is read as soon as the replica has it.
// When that position cannot be had, the read goes ahead without it; the
// change then shows on a later read, never out of order.
func (s *Stream) Woke(ctx context.Context) {
	if s == nil {
		return
	}
	if lsn, err := s.r.PrimaryAfter(ctx, time.Now()); err == nil && lsn > s.need {
		s.need = lsn
	}
}

// Read runs one read of the stream (Router.Do).
func (s *Stream) Read(ctx context.Context, read func(context.Context) error) error {
	if s == nil {
		return read(ctx)
	}
	return s.r.Do(ctx, s.need, read)
}
