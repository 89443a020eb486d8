package stdio

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

func TestRequestOfALeaf(t *testing.T) {
	task := &converge.Task{Kind: "backup", KindVersion: 2, Reaction: "reconcile", Trigger: "specChange",
		Namespace: "prod", Name: "db", UID: "42", Generation: 7, Spec: json.RawMessage(`{"bucket":"b"}`),
		Attempt: 3, DedupToken: "tok", Deadline: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	got, err := json.Marshal(NewRequest(task, []string{"status"}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocol":"converge.stdio/v1","reaction":{"name":"reconcile","trigger":"specChange","emits":["status"]},` +
		`"resource":{"kind":"backup","version":2,"namespace":"prod","name":"db","uid":"42","generation":7,"labels":{}},` +
		`"spec":{"bucket":"b"},"status":{},"config":{},"deadline":"2026-01-02T03:04:05Z","attempt":3,"dedup_token":"tok"}`
	if string(got) != want {
		t.Errorf("request\n got %s\nwant %s", got, want)
	}
}

func TestRequestCarriesTriggerData(t *testing.T) {
	task := &converge.Task{Kind: "zone", KindVersion: 1, Reaction: "rollup", Trigger: "childrenSettled",
		Rollup: &converge.Rollup{Total: 2, Ready: 1, Failed: 1, Culprits: []converge.Culprit{{
			Resource: converge.RefTo("vpc", "v"), Phase: "Failed", Message: "boom", Path: []converge.Ref{converge.RefTo("acct", "a")}}}},
		Operation: &converge.Operation{ID: "op1", Verb: "restart"},
		Status:    json.RawMessage(`not json`)}
	raw, _ := json.Marshal(NewRequest(task, nil))
	for _, want := range []string{
		`"rollup":{"total":2,"ready":1,"reconciling":0,"degraded":0,"failed":1,"deleting":0,"excluded":0,"culprits":[{"resource":{"kind":"vpc","name":"v"},"phase":"Failed","message":"boom","path":[{"kind":"acct","name":"a"}]}]}`,
		`"operation":{"id":"op1","verb":"restart","input":{}}`, `"status":{}`, `"emits":[]`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("request %s lacks %s", raw, want)
		}
	}
	reactor := &converge.Task{Kind: "notify", KindVersion: 1, Reaction: "notify", Trigger: "reactor",
		Reactor: &converge.ReactorEvent{Binding: "b", Transition: "failed", Watched: converge.Ref{Namespace: "ns", Kind: "db", Name: "x"},
			WatchedKindVersion: 1, WatchedGeneration: 4, WatchedPhase: "Failed", WatchedStatus: json.RawMessage(`{"a":1}`)}}
	raw, _ = json.Marshal(NewRequest(reactor, []string{"sideEffect"}))
	if strings.Contains(string(raw), `"resource"`) || !strings.Contains(string(raw),
		`"reactor":{"binding":"b","transition":"failed","watched":{"namespace":"ns","kind":"db","name":"x"},"watched_version":1,"watched_generation":4,"watched_phase":"Failed","watched_status":{"a":1}}`) {
		t.Errorf("reactor request %s", raw)
	}
}
