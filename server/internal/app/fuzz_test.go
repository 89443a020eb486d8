package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/convergehq/converge/server/internal/api"
	"github.com/convergehq/converge/server/internal/authz"
)

// fuzzToken is the one bearer token the fuzzed handler's policy knows;
// requests carry another, so each decoded request stops at the
// authorizer with Unauthenticated, before anything reads the (absent)
// database.
const fuzzToken = "fuzz-known-token"

// restHandler is the API handler newHandler builds, over a service
// without a store.
func restHandler(tb testing.TB) http.Handler {
	tb.Helper()
	az, err := authz.New(authz.WithTokens(map[string]string{fuzzToken: "fuzz"}))
	if err != nil {
		tb.Fatal(err)
	}
	svc := api.New(nil, nil, nil, nil, slog.New(slog.DiscardHandler))
	h, err := newHandler(svc, nil, nil, nil, nil, az, ClientLimits{}.withDefaults(), slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// serveREST sends one request to h; ok is false when method and target
// do not make a request to an API path (the only paths that need no
// database).
func serveREST(h http.Handler, method, target, contentType string, body []byte) (rec *httptest.ResponseRecorder, ok bool) {
	req, err := http.NewRequest(method, "http://converge.test"+target, bytes.NewReader(body))
	if err != nil || req.URL.Host != "converge.test" {
		return nil, false
	}
	if p := req.URL.Path; !strings.HasPrefix(p, "/api/v1/") && !strings.HasPrefix(p, "/converge.v1.ControlService/") {
		return nil, false
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer not-"+fuzzToken)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, true
}

// FuzzREST sends arbitrary methods, paths, query strings and bodies
// through the REST/JSON gateway and the Connect handler: transcoding,
// JSON decoding and request validation must answer every input with a
// client error (or the authorizer's refusal of a well-formed request),
// never a panic or a server error, and JSON answers must be JSON.
func FuzzREST(f *testing.F) {
	for _, s := range []struct{ method, target, contentType, body string }{
		{"POST", "/api/v1/kinds", "application/json", `{"kind":"bucket","kind_version":1,"spec_schema":{"type":"object"}}`},
		{"GET", "/api/v1/kinds/bucket/versions/1", "", ""},
		{"GET", "/api/v1/kinds/bucket/versions/x", "", ""},
		{"PATCH", "/api/v1/kinds/bucket/versions/1/policy", "application/json", `{"max_inflight":3}`},
		{"POST", "/api/v1/resources", "application/json", `{"kind":"bucket","kind_version":1,"name":"a","spec":{"size":1}}`},
		{"POST", "/api/v1/resources:batchApply", "application/json", `{"resources":[{"kind":"b","kind_version":1,"name":"a"}]}`},
		{"GET", "/api/v1/resources?kind=bucket&label_selector=env%3Dprod&page_size=10", "", ""},
		{"GET", "/api/v1/namespaces/default/resources/bucket/a/tree", "", ""},
		{"POST", "/api/v1/namespaces/default/resources/bucket/a/operations", "application/json", `{"verb":"restart","input":{"n":1e400}}`},
		{"GET", "/api/v1/events?limit=-1&since=2026-13-01", "", ""},
		{"DELETE", "/api/v1/providerconfigs/bucket/versions/1/%2F..", "", ""},
		{"POST", "/api/v1/reactorbindings", "application/json", `{"name":"n","watch":{"kind":"x"}}`},
		{"POST", "/converge.v1.ControlService/ApplyResource", "application/json", `{"kind":"b","kindVersion":"1","name":"a"}`},
		{"POST", "/converge.v1.ControlService/Watch", "application/connect+json", "\x00\x00\x00\x00\x02{}"},
		{"GET", "/api/v1/watch?kind=b", "", ""},
		// One of each class of client mistake the gate answers.
		{"POST", "/api/v1/resources", "application/json", `{"kind":"b","kind_version":1,"name":"a","spec":{"k":"\u0000"}}`},
		{"POST", "/api/v1/kinds", "application/json", `{"kind":"b","kind_version":1,"description":"a\u0000b"}`},
		{"GET", "/api/v1/resources?bogus=1", "", ""},
		{"GET", "/api/v1/resources?page_size=x", "", ""},
		{"GET", "/api/v1/resources?namespace=a%00b", "", ""},
		{"GET", "/api/v1/kinds/b/versions/1", "application/json", `{"x":1}`},
		{"PATCH", "/api/v1/kinds/b/versions/1/policy?update_mask=max_inflight,bogus", "application/json", `{"max_inflight":3}`},
		{"PATCH", "/api/v1/kinds/b/versions/1/policy", "application/json", `{"max_inflight":3,"bogus":1}`},
		{"PATCH", "/api/v1/kinds/b/versions/1/policy", "application/json", `{}`},
		{"POST", "/api/v1/resources", "Application/JSON; Charset=UTF-8", `{"kind":"b","kind_version":1,"name":"a"}`},
		{"POST", "/api/v1/resources", "text/plain", `{}`},
		{"POST", "/api/v1/resources", "application/json; charset=latin1", `{}`},
		{"POST", "/api/v1/resources", "application/json;;", `{}`},
		{"POST", "/converge.v1.ControlService/ApplyResource", "application/json; charset=utf-8", `{"kind":"b","kind_version":1,"name":"a","spec":{"\u0000":1}}`},
		{"DELETE", "/api/v1/resources", "", ""},
		{"GET", "/api/v1/nothing/here", "", ""},
		{"GET", "/api/v1/watch?bogus=1", "", ""},
	} {
		f.Add(s.method, s.target, s.contentType, []byte(s.body))
	}
	h := restHandler(f)
	f.Fuzz(func(t *testing.T, method, target, contentType string, body []byte) {
		rec, ok := serveREST(h, method, target, contentType, body)
		if !ok {
			return
		}
		if rec.Code >= 500 || http.StatusText(rec.Code) == "" {
			t.Fatalf("%s %q (%q): status %d, body %q", method, target, contentType, rec.Code, rec.Body.String())
		}
		ct := rec.Header().Get("Content-Type")
		if strings.HasPrefix(ct, "application/json") && rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: Content-Type %s but body %q is not JSON", method, target, ct, rec.Body.String())
		}
	})
}

// TestRESTDecodeReachesAuthorizer pins what FuzzREST relies on: a
// well-formed request is decoded and validated and then refused by the
// authorizer (401), while a malformed one is refused by decoding (400).
func TestRESTDecodeReachesAuthorizer(t *testing.T) {
	h := restHandler(t)
	for _, c := range []struct {
		method, target, body string
		want                 int
		says                 string
	}{
		{"POST", "/api/v1/resources", `{"kind":"bucket","kind_version":1,"name":"a","spec":{"size":1}}`, http.StatusUnauthorized, "token"},
		{"GET", "/api/v1/namespaces/default/resources/bucket/a", "", http.StatusUnauthorized, "token"},
		{"POST", "/api/v1/resources", `{"kind":"bucket","kind_version":"one"}`, http.StatusBadRequest, `field kind_version: "one" is not an integer`},
		{"POST", "/api/v1/resources", `{"kind":`, http.StatusBadRequest, "not JSON: it ends early"},
		{"GET", "/api/v1/kinds/bucket/versions/x", "", http.StatusBadRequest, "kind_version"},
		// A body field that does not decode is the client's error.
		{"POST", "/api/v1/kinds", `[]`, http.StatusBadRequest, "want a JSON object (a KindManifest), got an array"},
		{"PATCH", "/api/v1/kinds/b/versions/1/policy", `{"max_inflight":"many"}`, http.StatusBadRequest, `field max_inflight: "many" is not an integer`},
	} {
		rec, ok := serveREST(h, c.method, c.target, "application/json", []byte(c.body))
		if !ok {
			t.Fatalf("%s %s: not an API request", c.method, c.target)
		}
		var status struct{ Message string }
		_ = json.Unmarshal(rec.Body.Bytes(), &status)
		if rec.Code != c.want || !strings.Contains(status.Message, c.says) {
			t.Errorf("%s %s %s: status %d (%s), want %d saying %q", c.method, c.target, c.body, rec.Code, rec.Body.String(), c.want, c.says)
		}
	}
}
