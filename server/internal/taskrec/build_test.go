package taskrec

import (
	"encoding/json"
	"strings"
	"testing"

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
		claimed: store.Claimed{Lease: store.Lease{TaskID: 7, Generation: 3}, Trigger: "specChange", Attempt: 2, ResourceID: 9},
		task: &convergev1.Task{Kind: "subnet", KindVersion: 1, Reaction: "reconcile", Config: []byte(`{"secret":"s","zone":"a"}`),
			Resource: &convergev1.TaskResource{Spec: []byte(spec)}},
		returned: &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Error{Error: &convergev1.TaskError{
			Message: "cidr taken", Terminal: true, Reason: "CidrTaken"}}},
		out:     store.Outcome{Failed: true, Terminal: true, Message: "cidr taken", Reason: "CidrTaken"},
		outcome: store.RecordApplied,
	}
}

func TestBuildFlowedAndError(t *testing.T) {
	rec := build(pendingOf(`{"vpc":"vpc-1","cidr":"10.0.0.0/24"}`), [][]byte{[]byte(`[{"from":"/id","to":"/vpc"}]`)}, DefaultMaxBytes, redactions{})
	in, out := string(rec.Input), string(rec.Result)
	for _, want := range []string{`"flowed":[{"from":"/id","to":"/vpc","value":"vpc-1"}]`, `"secret":"(redacted)"`, `"zone":"a"`} {
		if !strings.Contains(in, want) {
			t.Errorf("input %s lacks %s", in, want)
		}
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
	rec := build(pendingOf(big), [][]byte{[]byte(`[{"from":"/id","to":"/vpc"}]`)}, MinMaxBytes, redactions{})
	if !rec.Truncated || len(rec.Input)+len(rec.Result) > MinMaxBytes {
		t.Fatalf("record of %d bytes, truncated=%v; want cut to %d", len(rec.Input)+len(rec.Result), rec.Truncated, MinMaxBytes)
	}
	if !strings.Contains(string(rec.Input), `"omitted_bytes"`) || !strings.Contains(string(rec.Input), `"value":"vpc-1"`) ||
		!strings.Contains(string(rec.Result), "cidr taken") {
		t.Fatalf("cut record lost what it should keep: %s %s", rec.Input, rec.Result)
	}
}

func TestDocSizeIsItsEncodedLength(t *testing.T) {
	d := doc{}
	d.str("kind", "subnet")
	d.set("n", 12)
	d.raw("spec", []byte(`{"a":[1,2]}`))
	if got, want := d.size(), len(d.bytes()); got != want+1 {
		// size counts a comma after every value; the encoding has one fewer.
		t.Fatalf("size = %d, encoded %d bytes", got, want)
	}
}

func TestDocBytesIsValidJSONInKeyOrder(t *testing.T) {
	d := doc{}
	d.str("kind", "a<b")
	d.raw("spec", []byte(`{"z": 1, "a": [true]}`))
	d.raw("bad", []byte(`{"not json`))
	got := string(d.bytes())
	if want := `{"kind":"a\u003cb","spec":{"z": 1, "a": [true]}}`; got != want || !json.Valid([]byte(got)) {
		t.Fatalf("bytes = %s, want %s", got, want)
	}
}

// BenchmarkBuild is the writer's cost of one W1-sized record.
func BenchmarkBuild(b *testing.B) {
	p := pendingOf(`{"i":12345}`)
	p.task.Resource.Status = []byte(`{"ok":true,"at":"2026-12-02T06:00:00.123456Z"}`)
	p.returned = &convergev1.TaskResult{Outcome: &convergev1.TaskResult_Success{Success: &convergev1.Success{
		Status: []byte(`{"ok":true,"at":"2026-12-02T06:00:01.123456Z"}`)}}}
	p.out = store.Outcome{}
	b.ReportAllocs()
	configs := redactions{}
	for b.Loop() {
		build(p, nil, DefaultMaxBytes, configs)
	}
}
