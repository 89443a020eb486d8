package taskrec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

func TestRedact(t *testing.T) {
	got, _ := json.Marshal(Redact([]byte(`{"region":"eu","apiKey":"k","nested":{"Password":"p","list":[{"token":"t","x":1}]}}`)))
	want := `{"apiKey":"(redacted)","nested":{"Password":"(redacted)","list":[{"token":"(redacted)","x":1}]},"region":"eu"}`
	if string(got) != want {
		t.Fatalf("Redact = %s, want %s", got, want)
	}
	if Redact([]byte(`not json`)) != Redacted {
		t.Fatal("a config that is not JSON must be redacted whole")
	}
}

func pendingOf(spec string) *Pending {
	return &Pending{
		claimed: claim{taskID: 7, generation: 3, trigger: "specChange", attempt: 2, resourceID: 9},
		input: Input{KindVersion: 1, Reaction: "reconcile", Config: []byte(`{"secret":"s","zone":"a"}`),
			Spec: []byte(spec), Status: []byte(`{}`), Labels: []byte(`{}`)},
		returned: &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{
			Message: "cidr taken", Terminal: true, Reason: "CidrTaken"}}},
		out:     store.Outcome{Failed: true, Terminal: true, Message: "cidr taken", Reason: "CidrTaken"},
		outcome: store.RecordApplied,
	}
}

// documents builds p's record and reads it back as its readers would.
func documents(t *testing.T, p *Pending, flows [][]byte, maxBytes int) (store.TaskRecord, string, string) {
	t.Helper()
	var e encoder
	rec := e.build(p, flows, maxBytes)
	in, out, err := Document("subnet", rec.Input, rec.Result)
	if err != nil {
		t.Fatal(err)
	}
	return rec, string(in), string(out)
}

func TestBuildFlowedAndError(t *testing.T) {
	rec, in, out := documents(t, pendingOf(`{"vpc":"vpc-1","cidr":"10.0.0.0/24"}`), [][]byte{[]byte(`[{"from":"/id","to":"/vpc"}]`)}, DefaultMaxBytes)
	for _, want := range []string{`"flowed":[{"from":"/id","to":"/vpc","value":"vpc-1"}]`, `"secret":"(redacted)"`, `"zone":"a"`, `"kind":"subnet"`} {
		if !strings.Contains(in, want) {
			t.Errorf("input %s lacks %s", in, want)
		}
	}
	if strings.Contains(in, `"labels"`) {
		t.Errorf("input %s names labels; a resource with none has no labels key", in)
	}
	if !strings.Contains(out, `"reason":"CidrTaken"`) || !strings.Contains(out, `"terminal":true`) {
		t.Errorf("result %s lacks the error", out)
	}
	if !rec.Failed || !rec.Terminal || rec.ErrorReason != "CidrTaken" || rec.Truncated {
		t.Errorf("record = %+v", rec)
	}
}

func TestBuildFitsTheBudget(t *testing.T) {
	big := `{"vpc":"vpc-1","blob":"` + strings.Repeat("x", 5000) + `"}`
	rec, in, out := documents(t, pendingOf(big), [][]byte{[]byte(`[{"from":"/id","to":"/vpc"}]`)}, MinMaxBytes)
	if !rec.Truncated || len(rec.Input)+len(rec.Result) > MinMaxBytes {
		t.Fatalf("record of %d bytes, truncated=%v; want cut to %d", len(rec.Input)+len(rec.Result), rec.Truncated, MinMaxBytes)
	}
	if !strings.Contains(in, `"spec":{"omitted_bytes":5025}`) || !strings.Contains(in, `"value":"vpc-1"`) ||
		!strings.Contains(out, "cidr taken") {
		t.Fatalf("cut record lost what it should keep: %s %s", in, out)
	}
}

// TestDocumentShape pins the documents a record of every part reads as.
func TestDocumentShape(t *testing.T) {
	p := &Pending{
		claimed: claim{taskID: 1, generation: 1, trigger: "specChange", resourceID: 2},
		input: Input{KindVersion: 3, Reaction: "reconcile", Spec: []byte(`{"a": 1}`), Status: []byte(`{"b": 2}`),
			Labels: []byte(`{"team": "net"}`), Config: []byte(`{"token": "t", "region": "eu"}`),
			Operation: []byte(`{"id": "op-1", "verb": "ping", "input": {"n": 1}}`)},
		returned: &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{
			Status: []byte(`{"ok":true}`), Unhealthy: true, OperationOutput: []byte(`{"pong":1}`),
			Conditions: []*convergev1.Condition{{Type: "Reachable", Status: "True"}, {Type: "Warm", Status: "False", Reason: "Cold"}}}}},
		children: []store.ChildSpec{{Kind: "subnet", Name: "a"}, {Kind: "subnet", Name: "b"}},
		outcome:  store.RecordApplied,
	}
	_, in, out := documents(t, p, nil, DefaultMaxBytes)
	wantIn := `{"config":{"region":"eu","token":"(redacted)"},"kind":"subnet","kind_version":3,"labels":{"team":"net"},` +
		`"operation":{"id": "op-1", "verb": "ping", "input": {"n": 1}},"reaction":"reconcile","spec":{"a": 1},"status":{"b": 2}}`
	wantOut := `{"children":{"count":2,"names":["subnet/a","subnet/b"]},` +
		`"conditions":[{"type":"Reachable","status":"True"},{"type":"Warm","status":"False","reason":"Cold"}],` +
		`"operation_output":{"pong":1},"status":{"ok":true},"unhealthy":true}`
	if in != wantIn {
		t.Errorf("input =\n%s\nwant\n%s", in, wantIn)
	}
	if compact(t, out) != compact(t, wantOut) {
		t.Errorf("result =\n%s\nwant\n%s", out, wantOut)
	}

	p.returned = &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{
		Message: "later", RetryAfter: durationpb.New(90 * time.Second)}}}
	p.children, p.outcome = nil, store.RecordDiscarded
	rec, _, out := documents(t, p, nil, DefaultMaxBytes)
	if want := `{"error":{"message":"later","retry_after":"1m30s","terminal":false}}`; out != want {
		t.Errorf("result = %s, want %s", out, want)
	}
	if !rec.Failed || rec.Error != "later" {
		t.Errorf("a discarded record's columns = %+v; want what the worker said", rec)
	}

	p.returned, p.out = nil, store.Outcome{Failed: true, Message: "deadline missed"}
	if _, _, out := documents(t, p, nil, DefaultMaxBytes); out != `{"server_error":"deadline missed"}` {
		t.Errorf("result = %s; want the server's error", out)
	}
}

// compact re-encodes a JSON document with protojson's spacing removed:
// protojson varies its spacing on purpose.
func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// A record written as JSON, before records were stored in parts, reads
// as it was written; bytes that are neither are refused, naming the part.
func TestDocumentFormats(t *testing.T) {
	legacy := []byte(`{"kind":"subnet","spec":{}}`)
	in, out, err := Document("subnet", legacy, []byte(`{}`))
	if err != nil || string(in) != string(legacy) || string(out) != "{}" {
		t.Fatalf("Document(legacy) = %s, %s, %v", in, out, err)
	}
	if in, _, err := Document("subnet", nil, nil); err != nil || string(in) != "{}" {
		t.Fatalf("Document(empty) = %s, %v", in, err)
	}
	for _, bad := range [][]byte{{7}, {formatParts, byte(keySpec), 9, '{'}, {formatParts, byte(keySpec) | cutFlag, 1, 0xff}} {
		if _, _, err := Document("subnet", bad, nil); err == nil || !strings.HasPrefix(err.Error(), "input: ") {
			t.Errorf("Document(%x) = %v; want an error naming the input", bad, err)
		}
	}
}

func FuzzDocument(f *testing.F) {
	var e encoder
	p := pendingOf(`{"vpc":"vpc-1"}`)
	rec := e.build(p, nil, DefaultMaxBytes)
	f.Add(rec.Input, rec.Result)
	f.Add([]byte(`{"kind":"x"}`), []byte{formatParts, byte(keyError) | cutFlag, 1, 5})
	f.Fuzz(func(t *testing.T, in, out []byte) {
		if _, _, err := Document("k", in, out); err != nil {
			return
		}
		for _, stored := range [][]byte{in, out} {
			if d, err := document("k", stored); err != nil || len(stored) > 0 && stored[0] == formatParts && !json.Valid(d) {
				t.Fatalf("document(%x) = %s, %v; want JSON", stored, d, err)
			}
		}
	})
}

// BenchmarkBuild is the writer's cost of one W1-sized record.
func BenchmarkBuild(b *testing.B) {
	p := pendingOf(`{"i":12345}`)
	p.input.Status = []byte(`{"ok":true,"at":"2026-12-02T06:00:00.123456Z"}`)
	p.returned = &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{
		Status: []byte(`{"ok":true,"at":"2026-12-02T06:00:01.123456Z"}`)}}}
	p.out = store.Outcome{}
	b.ReportAllocs()
	var e encoder
	for i := 0; b.Loop(); i++ {
		if i%1000 == 0 {
			e.reset()
		}
		e.build(p, nil, DefaultMaxBytes)
	}
}
