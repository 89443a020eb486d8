package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/api/openapi"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/limits"
)

// corpusBodyTimeout is the body deadline of the corpus server: short, so
// the stalled-body class costs little per route.
const corpusBodyTimeout = 400 * time.Millisecond

// operation is one route of the OpenAPI document.
type operation struct {
	method, path string
	params       []param
	body         map[string]any // the request body's schema, nil if none
}

type param struct{ name, in, typ string }

func (o operation) String() string { return o.method + " " + o.path }

// operations reads every route of the OpenAPI document the server
// serves, so a new route is in the corpus without editing this test.
func operations(t *testing.T) []operation {
	t.Helper()
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct{ Schemas map[string]map[string]any }
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []operation
	for path, methods := range doc.Paths {
		for method, raw := range methods {
			var op struct {
				Parameters []struct {
					Name, In string
					Schema   struct{ Type, Format string }
				}
				RequestBody *struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						}
					}
				}
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			o := operation{method: strings.ToUpper(method), path: path}
			for _, p := range op.Parameters {
				typ := p.Schema.Type
				if f := p.Schema.Format; f == "int64" || f == "uint64" || f == "int32" || f == "uint32" {
					typ = "integer" // 64-bit integers are JSON strings in proto3 JSON
				}
				o.params = append(o.params, param{p.Name, p.In, typ})
			}
			if op.RequestBody != nil {
				ref := op.RequestBody.Content["application/json"].Schema.Ref
				o.body = doc.Components.Schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
				if o.body == nil {
					o.body = map[string]any{}
				}
			}
			ops = append(ops, o)
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].String() < ops[j].String() })
	if len(ops) < 20 {
		t.Fatalf("the OpenAPI document lists %d operations; expected the whole API", len(ops))
	}
	return ops
}

// target fills the path's variables (override replaces one) and adds
// query.
func (o operation) target(override map[string]string, query string) string {
	p := o.path
	for _, pr := range o.params {
		if pr.in != "path" {
			continue
		}
		v := map[string]string{"integer": "1"}[pr.typ]
		if v == "" {
			v = map[string]string{"namespace": "default", "kind": "greeting"}[pr.name]
		}
		if v == "" {
			v = "a"
		}
		if o, ok := override[pr.name]; ok {
			v = o
		}
		p = strings.Replace(p, "{"+pr.name+"}", url.PathEscape(v), 1)
	}
	if query != "" {
		p += "?" + query
	}
	return p
}

// nulBody is a body with a NUL character in one of its string (or free
// JSON) properties, and the property's name; "" when the schema has none.
func (o operation) nulBody() (string, string) {
	props, _ := o.body["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, _ := props[n].(map[string]any)
		switch {
		case s["type"] == "string" && s["format"] == nil && s["enum"] == nil:
			return fmt.Sprintf(`{%q:"a\u0000b"}`, n), n
		case s["type"] == "object" && s["properties"] == nil:
			return fmt.Sprintf(`{%q:{"k":"a\u0000b"}}`, n), n
		}
	}
	return "", ""
}

// answerClient bounds each corpus request, so a server that waits on a
// client fails the test instead of hanging it.
var answerClient = &http.Client{Timeout: 20 * time.Second}

type answer struct {
	status  int
	message string
	raw     string
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.raw) }

func send(t *testing.T, base, method, target, contentType, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, base+target, strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := answerClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if strings.Contains(res.Header.Get("Content-Type"), "ndjson") {
		data = bytes.SplitN(data, []byte("\n"), 2)[0]
	}
	var st struct{ Message string }
	_ = json.Unmarshal(data, &st)
	return answer{status: res.StatusCode, message: st.Message, raw: string(data)}
}

// sendRaw writes a request by hand (for bodies http.Client will not
// send: declared larger than sent, cut short, or never sent) and reads
// the answer's status line and body.
func sendRaw(t *testing.T, addr, method, target string, declared int, body string, halfClose bool) answer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: converge.test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", method, target, declared, body)
	if halfClose {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s (Content-Length %d, %d bytes sent): no answer: %v", method, target, declared, len(body), err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	var st struct{ Message string }
	_ = json.Unmarshal(data, &st)
	return answer{status: res.StatusCode, message: st.Message, raw: string(data)}
}

// TestEveryRouteAnswersClientMistakesWith4xx sends every class of client
// mistake to every route of the OpenAPI document, against a real server
// and database: each answer is the expected standard 4xx, its message
// naming the parameter, header or field at fault. No input gets a 5xx.
func TestEveryRouteAnswersClientMistakesWith4xx(t *testing.T) {
	base, addr, ctl := serverWith(t, func(c *app.Config) { c.Clients.BodyTimeout = corpusBodyTimeout })
	applyGreeting(t, ctl)
	applyResource(t, ctl, "a", map[string]any{"name": "A"})

	type check struct {
		class  string
		got    answer
		want   int
		naming string
	}
	for _, op := range operations(t) {
		var checks []check
		add := func(class string, got answer, want int, naming string) {
			checks = append(checks, check{class, got, want, naming})
		}
		bodyOf := func(s string) string {
			if op.body == nil {
				return ""
			}
			return s
		}
		ct := map[bool]string{true: "application/json"}[op.body != nil]

		add("unknown query parameter", send(t, base, op.method, op.target(nil, "bogus_param=1"), ct, bodyOf("{}")), 400, "bogus_param")
		for _, p := range op.params {
			switch {
			case p.in == "query" && p.typ == "string":
				add("NUL in query "+p.name, send(t, base, op.method, op.target(nil, p.name+"=a%00b"), ct, bodyOf("{}")), 400, p.name)
			case p.in == "query" && p.typ == "integer":
				add("non-integer query "+p.name, send(t, base, op.method, op.target(nil, p.name+"=x1"), ct, bodyOf("{}")), 400, p.name)
			case p.in == "query" && p.typ == "boolean":
				add("non-boolean query "+p.name, send(t, base, op.method, op.target(nil, p.name+"=maybe"), ct, bodyOf("{}")), 400, p.name)
			case p.in == "path" && p.typ == "string":
				add("NUL in path "+p.name, send(t, base, op.method, op.target(map[string]string{p.name: "a\x00b"}, ""), ct, bodyOf("{}")), 400, p.name)
			case p.in == "path" && p.typ == "integer":
				add("non-integer path "+p.name, send(t, base, op.method, op.target(map[string]string{p.name: "x1"}, ""), ct, bodyOf("{}")), 400, p.name)
			}
			// Values of the right type that break a naming rule.
			switch {
			case p.name == "namespace" && p.in == "query":
				add("invalid namespace in query", send(t, base, op.method, op.target(nil, "namespace=Bad%20NS"), ct, bodyOf("{}")), 400, "namespace")
			case p.name == "namespace" && p.in == "path":
				add("invalid namespace in path", send(t, base, op.method, op.target(map[string]string{p.name: "Bad NS"}, ""), ct, bodyOf("{}")), 400, "namespace")
			case p.name == "label_selector":
				for _, sel := range []string{"a,,b", "%C3%A9=1", "a=b=c"} {
					add("label selector "+sel, send(t, base, op.method, op.target(nil, "label_selector="+sel), ct, bodyOf("{}")), 400, "label")
				}
			}
		}
		if op.body == nil {
			add("a body where none is taken", send(t, base, op.method, op.target(nil, ""), "application/json", `{"x":1}`), 400, "no request body")
		} else {
			tgt := op.target(nil, "")
			add("Content-Type text/plain", send(t, base, op.method, tgt, "text/plain", "{}"), 415, "Content-Type")
			add("Content-Type with another charset", send(t, base, op.method, tgt, "application/json; charset=latin1", "{}"), 415, "charset")
			if a := send(t, base, op.method, tgt, "Application/JSON; Charset=UTF-8", "{}"); a.status == 415 || a.status >= 500 {
				add("Content-Type with parameters and case", a, 400, "")
			}
			add("unknown body field", send(t, base, op.method, tgt, "application/json", `{"bogus_field":1}`), 400, "bogus_field")
			add("body not JSON", send(t, base, op.method, tgt, "application/json", `{"a":`), 400, "not JSON")
			add("body not an object", send(t, base, op.method, tgt, "application/json", `[1]`), 400, "JSON object")
			if body, field := op.nulBody(); body != "" {
				add("NUL in body field", send(t, base, op.method, tgt, "application/json", body), 400, field)
			}
			add("body over the limit", sendRaw(t, addr, op.method, tgt, limits.MaxRequestBytes+1, "{", false), 413, "limit")
			add("body cut short", sendRaw(t, addr, op.method, tgt, 100, `{"a":`, true), 400, "request body")
			add("body that never comes", sendRaw(t, addr, op.method, tgt, 10, "", false), 408, "did not arrive")
		}
		for _, c := range checks {
			if c.got.status >= 500 || http.StatusText(c.got.status) == "" || c.got.status != c.want ||
				!strings.Contains(c.got.message, c.naming) {
				t.Errorf("%s, %s: got %s; want %d naming %q", op, c.class, c.got, c.want, c.naming)
			}
		}
	}
}
