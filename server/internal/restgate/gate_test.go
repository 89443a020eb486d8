package restgate_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/restgate"
)

// passed is what the gate handed on.
type passed struct {
	query, body, contentType string
}

func gate(t *testing.T) (*restgate.Gate, *passed) {
	t.Helper()
	routes, err := restgate.Routes(convergev1.File_converge_v1_control_proto.Services().ByName("ControlService"))
	if err != nil {
		t.Fatal(err)
	}
	got := &passed{}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = passed{query: r.URL.RawQuery, body: string(b), contentType: r.Header.Get("Content-Type")}
	})
	return restgate.New(restgate.Config{Routes: routes, RPCPrefix: "/converge.v1.ControlService/", MaxBodyBytes: 1 << 10}, next), got
}

func do(g http.Handler, method, target, ct, body string) (int, string) {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	var st struct{ Message string }
	_ = json.Unmarshal(rec.Body.Bytes(), &st)
	return rec.Code, st.Message
}

func TestGateRefusesNamingWhatIsWrong(t *testing.T) {
	g, _ := gate(t)
	for _, c := range []struct {
		method, target, ct, body string
		want                     int
		says                     string
	}{
		{"GET", "/api/v1/resources?bogus=1", "", "", 400, "query parameter bogus: no such parameter; this route takes namespace, kind"},
		{"GET", "/api/v1/resources?page_size=x", "", "", 400, `query parameter page_size: "x" is not an integer`},
		{"GET", "/api/v1/resources?page_size=99999999999", "", "", 400, "out of range"},
		{"GET", "/api/v1/resources?summary=maybe", "", "", 400, "summary"},
		{"GET", "/api/v1/resources?kind=a&kind=b", "", "", 400, "given 2 times"},
		{"GET", "/api/v1/resources?namespace=a%00b", "", "", 400, "NUL"},
		{"GET", "/api/v1/resources?namespace=%ff", "", "", 400, "UTF-8"},
		{"GET", "/api/v1/kinds/k/versions/x", "", "", 400, "path segment {kind_version}"},
		{"GET", "/api/v1/kinds/k/versions/1?kind=z", "", "", 400, "set by the request path"},
		{"POST", "/api/v1/resources?kind=a", "application/json", "{}", 400, "takes its request in the body"},
		{"GET", "/api/v1/kinds/k/versions/1", "application/json", `{"a":1}`, 400, "takes no request body"},
		{"POST", "/api/v1/resources", "text/plain", "{}", 415, "text/plain is not accepted"},
		{"POST", "/api/v1/resources", "application/json; charset=iso-8859-1", "{}", 415, "charset"},
		{"POST", "/api/v1/resources", "", "{}", 415, "missing"},
		{"POST", "/api/v1/resources", "application/json", strings.Repeat(" ", 2000), 413, "limit of 1024 bytes"},
		{"POST", "/api/v1/resources", "application/json", `{"kind_version":"one"}`, 400, `field kind_version: "one" is not an integer`},
		{"POST", "/api/v1/resources", "application/json", `{"labels":{"a":1}}`, 400, `field labels["a"]: want a string`},
		{"POST", "/api/v1/resources:batchApply", "application/json", `{"resources":[{},{"nme":"a"}]}`, 400, "field resources[1].nme: unknown field"},
		{"POST", "/api/v1/resources", "application/json", `{"kind":"a"} {}`, 400, "more than one JSON value"},
		{"PATCH", "/api/v1/kinds/k/versions/1/policy?update_mask=max_inflight,nope", "application/json", `{"max_inflight":1}`, 400, `"nope" is not a field of KindPolicy`},
		{"PATCH", "/api/v1/kinds/k/versions/1/policy", "application/json", `{}`, 400, "names no field"},
		{"DELETE", "/api/v1/resources", "", "", 405, "DELETE is not allowed"},
		{"GET", "/api/v1/nope", "", "", 404, "no API route"},
	} {
		code, msg := do(g, c.method, c.target, c.ct, c.body)
		if code != c.want || !strings.Contains(msg, c.says) {
			t.Errorf("%s %s %q: %d %q; want %d saying %q", c.method, c.target, c.body, code, msg, c.want, c.says)
		}
	}
}

func TestGateHandsOnTheTranscodersForm(t *testing.T) {
	g, got := gate(t)
	if code, msg := do(g, "GET", "/api/v1/resources?labelSelector=a%3Db&page_size=5", "", ""); code != 200 {
		t.Fatalf("%d %s", code, msg)
	}
	if got.query != "label_selector=a%3Db&page_size=5" {
		t.Errorf("query handed on as %q; want proto names", got.query)
	}
	if code, msg := do(g, "PATCH", "/api/v1/kinds/k/versions/1/policy", "Application/JSON; Charset=UTF-8", `{"resync_interval_seconds":300}`); code != 200 {
		t.Fatalf("%d %s", code, msg)
	}
	if got.query != "update_mask=resyncIntervalSeconds" || got.contentType != "application/json" || got.body != `{"resync_interval_seconds":300}` {
		t.Errorf("PATCH handed on as %+v; want the mask made explicit, plain JSON", *got)
	}
	if code, msg := do(g, "PATCH", "/api/v1/kinds/k/versions/1/policy?update_mask=max_inflight", "application/json", `{"max_inflight":2,"retired":true}`); code != 200 {
		t.Fatalf("%d %s", code, msg)
	}
	if got.query != "update_mask=maxInflight" {
		t.Errorf("an explicit mask handed on as %q", got.query)
	}
	if code, msg := do(g, "POST", "/converge.v1.ControlService/ListKinds", "application/json; charset=UTF-8", `{}`); code != 200 || got.contentType != "application/json" {
		t.Errorf("Connect request: %d %s, Content-Type handed on %q", code, msg, got.contentType)
	}
	if code, _ := do(g, "POST", "/converge.v1.ControlService/ListKinds", "application/proto", strings.Repeat("x", 2000)); code != 413 {
		t.Errorf("an oversized Connect body: %d, want 413", code)
	}
}
