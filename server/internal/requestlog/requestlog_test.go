package requestlog_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/convergehq/converge/server/internal/requestlog"
	"github.com/convergehq/converge/server/internal/testkit"
)

// TestFaultsAreLoggedUnderTheRequestID: a server error's response carries
// the request id, and the log has the id with the cause; a client error
// is not logged as a fault.
func TestFaultsAreLoggedUnderTheRequestID(t *testing.T) {
	var logs testkit.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	in := requestlog.Interceptor(log)
	handler := func(err error) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			call := in.WrapUnary(func(context.Context, connect.AnyRequest) (connect.AnyResponse, error) { return nil, err })
			_, err := call(r.Context(), connect.NewRequest(&emptypb.Empty{}))
			if err != nil {
				w.WriteHeader(map[bool]int{true: 500, false: 400}[connect.CodeOf(err) == connect.CodeInternal])
				_, _ = w.Write([]byte(err.Error()))
			}
		})
	}

	rec := httptest.NewRecorder()
	requestlog.Middleware(log, handler(connect.NewError(connect.CodeInternal, errors.New("the disk is on fire")))).
		ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/kinds", nil))
	id := rec.Header().Get(requestlog.Header)
	if len(id) != 16 {
		t.Fatalf("response header %s = %q, want a 16-hex-digit id", requestlog.Header, id)
	}
	if !strings.Contains(rec.Body.String(), "request id "+id) {
		t.Errorf("the error the caller sees (%q) does not carry request id %s", rec.Body.String(), id)
	}
	if got := logs.String(); !strings.Contains(got, "request_id="+id) || !strings.Contains(got, "the disk is on fire") {
		t.Errorf("the log does not have the fault under its id %s:\n%s", id, got)
	}
	if n := strings.Count(logs.String(), "server fault"); n != 1 {
		t.Errorf("the fault was logged %d times, want once:\n%s", n, logs.String())
	}

	// A 5xx no interceptor explained is logged by the middleware.
	logs.Reset()
	rec = httptest.NewRecorder()
	requestlog.Middleware(log, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(502) })).
		ServeHTTP(rec, httptest.NewRequest("GET", "/x", nil))
	if got := logs.String(); !strings.Contains(got, "request_id="+rec.Header().Get(requestlog.Header)) || !strings.Contains(got, "status=502") {
		t.Errorf("a bare 502 was not logged with its id:\n%s", got)
	}

	// The caller's mistakes are not faults.
	logs.Reset()
	rec = httptest.NewRecorder()
	requestlog.Middleware(log, handler(connect.NewError(connect.CodeInvalidArgument, errors.New("bad name")))).
		ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/kinds", nil))
	if logs.String() != "" || strings.Contains(rec.Body.String(), "request id") {
		t.Errorf("a client error was treated as a fault: log %q, body %q", logs.String(), rec.Body.String())
	}
}
