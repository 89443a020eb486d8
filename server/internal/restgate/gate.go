// Package restgate checks API requests at the door, before the REST
// transcoder and the Connect handlers see them: the route and its path
// variables, every query parameter, the Content-Type, the body's size,
// arrival and shape. A client mistake is answered with a 4xx naming the
// parameter, header or body field (in the proto field names docs and YAML
// use) and what is allowed; what passes decodes downstream, so nothing a
// client sends reaches the transcoder's own, coarser, errors.
package restgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"connectrpc.com/connect"
)

// Config says what the gate guards and how.
type Config struct {
	// Routes are the REST routes (see Routes).
	Routes []*Route
	// RPCPrefix is the path prefix of the service's Connect/gRPC
	// procedures ("/converge.v1.ControlService/"), whose bodies the gate
	// bounds too.
	RPCPrefix string
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// BodyTimeout bounds how long a body may take to arrive once the
	// headers are in; zero means no limit.
	BodyTimeout time.Duration
}

// Gate is the checking handler in front of next.
type Gate struct {
	cfg  Config
	next http.Handler
}

// New puts a gate in front of next.
func New(cfg Config, next http.Handler) *Gate { return &Gate{cfg: cfg, next: next} }

// Error is a refusal: the HTTP status, the RPC code the body carries and
// the message.
type Error struct {
	Status  int
	Code    connect.Code
	Message string
}

func (e *Error) Error() string { return e.Message }

func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: connect.CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.cfg.RPCPrefix != "" && strings.HasPrefix(r.URL.Path, g.cfg.RPCPrefix) {
		if e := g.admitRPC(w, r); e != nil {
			writeConnectError(w, e)
			return
		}
		g.next.ServeHTTP(w, r)
		return
	}
	if e := g.admitREST(w, r); e != nil {
		writeRESTError(w, e)
		return
	}
	g.next.ServeHTTP(w, r)
}

// admitREST checks a REST request and rewrites it into the form the
// transcoder reads: proto names in the query, a PATCH's mask made
// explicit, the body buffered with a plain Content-Type.
func (g *Gate) admitREST(w http.ResponseWriter, r *http.Request) *Error {
	route, vars, other := find(g.cfg.Routes, r.Method, r.URL.EscapedPath())
	if route == nil {
		if other {
			return &Error{Status: http.StatusMethodNotAllowed, Code: connect.CodeUnimplemented,
				Message: fmt.Sprintf("%s is not allowed on %s; the API's routes are listed in /openapi.json", printable(r.Method), r.URL.EscapedPath())}
		}
		return &Error{Status: http.StatusNotFound, Code: connect.CodeNotFound,
			Message: fmt.Sprintf("no API route %s %s; the routes are listed in /openapi.json", printable(r.Method), r.URL.EscapedPath())}
	}
	for _, f := range route.PathFields() {
		if why := checkValue(f, vars[f]); why != "" {
			return badRequest("path segment {%s}: %s", f.Name(), why)
		}
	}
	q, e := checkQuery(route, r.URL.RawQuery)
	if e != nil {
		return e
	}
	data, e := g.readBody(w, r, route.Body != "")
	if e != nil {
		return e
	}
	if route.Body != "" {
		if len(bytes.TrimSpace(data)) == 0 {
			data = []byte("{}")
		}
		if m := route.BodyMessage(); m != nil {
			fields, e := checkBody(m, data)
			if e != nil {
				return e
			}
			if e := deriveMask(route, r.Method, q, fields); e != nil {
				return e
			}
		}
		r.Header.Set("Content-Type", "application/json")
	}
	r.URL.RawQuery = q.Encode()
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	return nil
}

// deriveMask makes a PATCH change only the fields its body names, as a
// REST client expects, by filling update_mask from them when the query
// does not give one.
func deriveMask(route *Route, method string, q url.Values, fields []string) *Error {
	if method != http.MethodPatch {
		return nil
	}
	f := route.Input().Fields().ByName("update_mask")
	if f == nil || !isFieldMask(f) || q.Has("update_mask") {
		return nil
	}
	if len(fields) == 0 {
		return badRequest("request body: names no field to change; a PATCH changes the fields its body names (or those update_mask lists)")
	}
	mask, e := checkMask(route, "update_mask", strings.Join(fields, ","))
	if e != nil {
		return e
	}
	q.Set("update_mask", mask)
	return nil
}

// admitRPC bounds a Connect or gRPC request's body like a REST one's and
// gives the handler a plain JSON Content-Type however it was spelled.
func (g *Gate) admitRPC(w http.ResponseWriter, r *http.Request) *Error {
	if r.Method != http.MethodPost {
		return nil
	}
	if mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "application/json" {
		if cs, ok := params["charset"]; !ok || strings.EqualFold(cs, "utf-8") {
			r.Header.Set("Content-Type", "application/json")
		}
	}
	data, e := g.readBodyOnly(w, r)
	if e != nil {
		return e
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(data)), int64(len(data))
	return nil
}

// readBody reads a REST body after checking its Content-Type; a route
// that takes none refuses one.
func (g *Gate) readBody(w http.ResponseWriter, r *http.Request, takesBody bool) ([]byte, *Error) {
	if !takesBody {
		if r.ContentLength > 0 {
			return nil, badRequest("this route takes no request body (got %d bytes); its input is the path and query", r.ContentLength)
		}
		data, e := g.readBodyOnly(w, r)
		if e == nil && len(data) > 0 {
			e = badRequest("this route takes no request body; its input is the path and query")
		}
		return nil, e
	}
	if e := checkContentType(r.Header.Get("Content-Type"), r.ContentLength); e != nil {
		return nil, e
	}
	return g.readBodyOnly(w, r)
}

// checkContentType accepts JSON as RFC 9110 spells media types: any case,
// with parameters, a charset only if it is UTF-8. An empty body needs no
// type.
func checkContentType(ct string, length int64) *Error {
	if ct == "" {
		if length == 0 {
			return nil
		}
		return &Error{Status: http.StatusUnsupportedMediaType, Code: connect.CodeInvalidArgument,
			Message: "Content-Type header: missing; send the body as application/json"}
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return &Error{Status: http.StatusUnsupportedMediaType, Code: connect.CodeInvalidArgument,
			Message: fmt.Sprintf("Content-Type header %s: not a media type (%v); send application/json", printable(ct), err)}
	}
	if mt != "application/json" {
		return &Error{Status: http.StatusUnsupportedMediaType, Code: connect.CodeInvalidArgument,
			Message: fmt.Sprintf("Content-Type header: %s is not accepted; send the body as application/json", printable(mt))}
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return &Error{Status: http.StatusUnsupportedMediaType, Code: connect.CodeInvalidArgument,
			Message: fmt.Sprintf("Content-Type header: charset %s is not accepted; JSON bodies are UTF-8", printable(cs))}
	}
	return nil
}

// readBodyOnly reads the whole body within the size limit and the body
// deadline. A body that stops coming is answered 408 and its connection
// closed, so a client that sends headers and then nothing holds nothing
// for longer than the deadline.
func (g *Gate) readBodyOnly(w http.ResponseWriter, r *http.Request) ([]byte, *Error) {
	limit := g.cfg.MaxBodyBytes
	tooLarge := &Error{Status: http.StatusRequestEntityTooLarge, Code: connect.CodeResourceExhausted,
		Message: fmt.Sprintf("request body: over the limit of %d bytes (docs/limits.md)", limit)}
	if limit > 0 && r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		return nil, tooLarge
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	// The deadline is lifted only once the body is in: after a refusal it
	// stays, so the server's own draining of an unread body cannot wait
	// on the client either.
	rc := http.NewResponseController(w)
	deadlined := g.cfg.BodyTimeout > 0 && rc.SetReadDeadline(time.Now().Add(g.cfg.BodyTimeout)) == nil
	src := io.Reader(r.Body)
	if limit > 0 {
		src = io.LimitReader(r.Body, limit+1)
	}
	data, err := io.ReadAll(src)
	if deadlined && err == nil && (limit <= 0 || int64(len(data)) <= limit) {
		_ = rc.SetReadDeadline(time.Time{})
	}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		return nil, &Error{Status: http.StatusRequestTimeout, Code: connect.CodeDeadlineExceeded,
			Message: fmt.Sprintf("request body: did not arrive within %s of the headers", g.cfg.BodyTimeout)}
	case err != nil:
		w.Header().Set("Connection", "close")
		return nil, badRequest("request body: ended after %d bytes, before it was complete (%v)", len(data), err)
	case limit > 0 && int64(len(data)) > limit:
		w.Header().Set("Connection", "close")
		return nil, tooLarge
	}
	return data, nil
}

// writeRESTError answers in the transcoder's error shape, a
// google.rpc.Status.
func writeRESTError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(e.Code), "message": e.Message, "details": []any{}})
}

// writeConnectError answers in the Connect protocol's error shape, which
// Connect clients read whatever the HTTP status.
func writeConnectError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": e.Code.String(), "message": e.Message})
}
