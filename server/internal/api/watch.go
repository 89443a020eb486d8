package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// Watch timing: the failsafe poll when no wake-up arrives, and the
// keep-alive heartbeat on a quiet stream.
const (
	watchPoll      = 500 * time.Millisecond
	watchKeepAlive = 15 * time.Second
	watchPage      = 500
	// watchDedupLimit bounds the per-stream memory used to drop changes
	// that arrive after a newer change of the same resource.
	watchDedupLimit = 100_000
)

// Watch streams changes from a resume point.
func (s *Service) Watch(ctx context.Context, req *convergev1.WatchRequest, stream *connect.ServerStream[convergev1.WatchResponse]) error {
	var header http.Header
	if ci, ok := connect.CallInfoForHandlerContext(ctx); ok {
		header = ci.RequestHeader()
	}
	return s.watch(ctx, req, header, stream.Send)
}

// watch is the Watch stream, whatever carries it; header is the request's
// (for its read-your-writes token). The first message is a heartbeat sent
// once the stream is positioned: every change after it will be delivered.
func (s *Service) watch(ctx context.Context, req *convergev1.WatchRequest, header http.Header, send func(*convergev1.WatchResponse) error) error {
	if req.GetName() != "" && req.GetKind() == "" {
		return invalid("watch: name needs kind")
	}
	// The authorizer decides a stream before its request is read, so a
	// Watch of one resource is decided here, and any other is narrowed to
	// what the caller may read.
	if ns, kind, ok := readTarget(req); ok {
		if err := s.checkRead(ctx, "Watch", ns, kind); err != nil {
			return err
		}
	}
	f := store.ChangeFilter{Namespace: req.GetNamespace(), Kind: req.GetKind(), Name: req.GetName(), Visible: s.visible(ctx)}
	if f.Name != "" && f.Namespace == "" {
		f.Namespace = DefaultNamespace
	}
	// The wake-ups are the primary's notifications wherever the feed is
	// read: a standby delivers none.
	wake, stop := s.bus.Subscribe(notify.Changes)
	defer stop()
	route, err := s.reads.Stream(header)
	if err != nil {
		return err
	}
	var cursor store.Cursor
	if tok := req.GetCursor(); tok != "" {
		if cursor, err = store.ParseCursor(tok); err != nil {
			return invalid("cursor: %v", err)
		}
		if err := s.store.CheckCursor(ctx, cursor); errors.Is(err, store.ErrCursorExpired) {
			return connect.NewError(connect.CodeOutOfRange, err)
		} else if err != nil {
			return storeError(err)
		}
	} else if err := route.Read(ctx, func(ctx context.Context) (err error) {
		cursor, err = s.store.CurrentCursor(ctx)
		return storeError(err)
	}); err != nil {
		return err
	}
	if err := send(&convergev1.WatchResponse{Heartbeat: true, Cursor: cursor.String()}); err != nil {
		return err
	}
	seen := map[int64]int64{}
	poll := time.NewTicker(watchPoll)
	defer poll.Stop()
	lastSent := time.Now()
	for {
		var changes []store.Change
		var next store.Cursor
		err := route.Read(ctx, func(ctx context.Context) (err error) {
			changes, next, err = s.store.ReadChanges(ctx, cursor, f, watchPage)
			return storeError(err)
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var out []*convergev1.Change
		for _, ch := range changes {
			if ch.ResourceVersion <= seen[ch.ResourceID] {
				continue
			}
			if len(seen) >= watchDedupLimit {
				clear(seen)
			}
			seen[ch.ResourceID] = ch.ResourceVersion
			out = append(out, toChange(ch))
		}
		moved := next != cursor
		cursor = next
		if len(out) > 0 || (moved && time.Since(lastSent) > watchKeepAlive) {
			if err := send(&convergev1.WatchResponse{Changes: out, Heartbeat: len(out) == 0, Cursor: cursor.String()}); err != nil {
				return err
			}
			lastSent = time.Now()
		}
		if len(changes) == watchPage {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			route.Woke(ctx)
		case <-poll.C:
			if time.Since(lastSent) > watchKeepAlive {
				if err := send(&convergev1.WatchResponse{Heartbeat: true, Cursor: cursor.String()}); err != nil {
					return err
				}
				lastSent = time.Now()
			}
		}
	}
}

// ServeWatchNDJSON serves GET /api/v1/watch: the Watch stream as
// newline-delimited JSON, one WatchResponse per line, for curl and other
// plain HTTP clients. check is the validation every RPC request gets;
// this route does not pass through the RPC handler, so it applies it
// itself. A refusal has the REST routes' error shape.
func (s *Service) ServeWatchNDJSON(check func(any) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serveWatchNDJSON(w, r, check) })
}

func (s *Service) serveWatchNDJSON(w http.ResponseWriter, r *http.Request, check func(any) error) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	req := &convergev1.WatchRequest{Namespace: q.Get("namespace"), Kind: q.Get("kind"), Name: q.Get("name"), Cursor: q.Get("cursor")}
	if err := check(req); err != nil {
		writeStatus(w, err)
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	started := false
	opts := protojson.MarshalOptions{UseProtoNames: true}
	err := s.watch(r.Context(), req, r.Header, func(m *convergev1.WatchResponse) error {
		b, err := opts.Marshal(m)
		if err != nil {
			return err
		}
		started = true
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
	if err != nil && !started {
		writeStatus(w, err)
	}
}

// writeStatus answers err as the REST routes do: the HTTP status of its
// code and a google.rpc.Status body.
func writeStatus(w http.ResponseWriter, err error) {
	code, msg := connect.CodeUnknown, err.Error()
	if ce := new(connect.Error); errors.As(err, &ce) {
		code, msg = ce.Code(), ce.Message()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus(code))
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(code), "message": strings.TrimSpace(msg), "details": []any{}})
}

// httpStatus maps a code the way REST transcoding does for the other routes.
func httpStatus(c connect.Code) int {
	switch c {
	case connect.CodeInvalidArgument, connect.CodeFailedPrecondition, connect.CodeOutOfRange:
		return http.StatusBadRequest
	case connect.CodeNotFound:
		return http.StatusNotFound
	case connect.CodePermissionDenied:
		return http.StatusForbidden
	case connect.CodeUnauthenticated:
		return http.StatusUnauthorized
	case connect.CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
