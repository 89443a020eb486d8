package converge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestTerminalWrapsAndIsDetected(t *testing.T) {
	err := Terminal(io.ErrUnexpectedEOF)
	if err.Error() != io.ErrUnexpectedEOF.Error() {
		t.Errorf("message = %q; want the wrapped error's", err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not see through Terminal")
	}
	if !IsTerminal(fmt.Errorf("context: %w", err)) {
		t.Error("IsTerminal does not see a wrapped terminal error")
	}
	if IsTerminal(io.EOF) || IsTerminal(nil) {
		t.Error("IsTerminal reports a plain error as terminal")
	}
	if Terminal(nil) != nil {
		t.Error("Terminal(nil) is not nil")
	}
}

func TestDecode(t *testing.T) {
	task := &Task{Kind: "greeting", Namespace: "default", Name: "hello", Spec: json.RawMessage(`{"name":"world"}`)}
	var spec struct{ Name string }
	if err := task.DecodeSpec(&spec); err != nil || spec.Name != "world" {
		t.Fatalf("DecodeSpec = %v, %+v", err, spec)
	}
	status := struct{ Message string }{"kept"}
	if err := task.DecodeStatus(&status); err != nil || status.Message != "kept" {
		t.Fatalf("DecodeStatus of an empty status = %v, %+v; want nil and v unchanged", err, status)
	}
	task.Status = json.RawMessage(`{"message":1}`)
	err := task.DecodeStatus(&status)
	if err == nil || !strings.Contains(err.Error(), "decode status of greeting default/hello") {
		t.Fatalf("DecodeStatus of a mistyped status = %v; want an error naming the field and resource", err)
	}
}

func TestTaskRollup(t *testing.T) {
	m := greetingTask(1, `{}`)
	if newTask(m).Rollup != nil {
		t.Fatal("a task without a rollup has a Rollup")
	}
	m.Trigger = "childrenSettled"
	m.Rollup = &convergev1.Rollup{
		Total: 9, Ready: 4, Reconciling: 1, Degraded: 1, Failed: 2, Deleting: 1, Excluded: 3,
		Culprits: []*convergev1.Culprit{{
			Resource: &convergev1.ResourceRef{Namespace: "default", Kind: "route", Name: "lz-route-2"},
			Phase:    "Failed",
			Message:  "no such gateway",
			Path: []*convergev1.ResourceRef{
				{Namespace: "default", Kind: "landingzone", Name: "lz"},
				{Namespace: "default", Kind: "network", Name: "lz-net"},
			},
		}, {
			Resource: &convergev1.ResourceRef{Kind: "vpc", Name: "lz-vpc-1"},
			Phase:    "Degraded",
		}},
	}
	got := newTask(m).Rollup
	want := &Rollup{
		Total: 9, Ready: 4, Reconciling: 1, Degraded: 1, Failed: 2, Deleting: 1, Excluded: 3,
		Culprits: []Culprit{{
			Resource: Ref{Namespace: "default", Kind: "route", Name: "lz-route-2"},
			Phase:    "Failed",
			Message:  "no such gateway",
			Path:     []Ref{{Namespace: "default", Kind: "landingzone", Name: "lz"}, {Namespace: "default", Kind: "network", Name: "lz-net"}},
		}, {
			Resource: Ref{Kind: "vpc", Name: "lz-vpc-1"},
			Phase:    "Degraded",
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Rollup = %+v;\nwant %+v", got, want)
	}
}

// A preview task says so, and only a preview task does.
func TestTaskPreview(t *testing.T) {
	if newTask(&convergev1.Task{Kind: "k"}).Preview() {
		t.Fatal("a plain task reports Preview")
	}
	if !newTask(&convergev1.Task{Kind: "k", Preview: true}).Preview() {
		t.Fatal("a preview task does not report Preview")
	}
}
