package converge

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type greetSpec struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
}

type greetStatus struct {
	Message string `json:"message"`
}

func TestTypedDecodesTheSpecAndTypesTheStatus(t *testing.T) {
	var got *TypedTask[greetSpec]
	h := Typed(func(_ context.Context, tt *TypedTask[greetSpec]) (*TypedResult[greetStatus], error) {
		got = tt
		r := StatusResult(greetStatus{Message: "hi " + tt.Spec.Name})
		r.Unhealthy = true
		return r, nil
	})
	task := &Task{Kind: "greeting", Name: "hello", Spec: json.RawMessage(`{"name":"ada","replicas":2,"extra":true}`)}
	res, err := h(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	if got.Task != task || got.Spec != (greetSpec{Name: "ada", Replicas: 2}) || got.Name != "hello" {
		t.Fatalf("typed task = %+v; want the task with its spec decoded (the unknown field ignored)", got)
	}
	b, err := json.Marshal(res.Status)
	if err != nil || string(b) != `{"message":"hi ada"}` || !res.Unhealthy {
		t.Fatalf("result = %+v (status %s, %v); want the typed status, unhealthy", res, b, err)
	}
}

func TestTypedNilResultsAndErrors(t *testing.T) {
	h := Typed(func(_ context.Context, tt *TypedTask[greetSpec]) (*TypedResult[greetStatus], error) {
		switch tt.Spec.Name {
		case "nil":
			return nil, nil
		case "no status":
			return &TypedResult[greetStatus]{Conditions: []Condition{{Type: "Ok", Status: ConditionTrue}}}, nil
		}
		return nil, errors.New("try later")
	})
	res, err := h(context.Background(), &Task{Spec: json.RawMessage(`{"name":"nil"}`)})
	if res != nil || err != nil {
		t.Errorf("nil result: got %v, %v", res, err)
	}
	res, err = h(context.Background(), &Task{Spec: json.RawMessage(`{"name":"no status"}`)})
	if err != nil || res == nil || res.Status != nil || len(res.Conditions) != 1 {
		// A nil *greetStatus stored in Result.Status would not be a nil
		// interface, and would encode as null.
		t.Errorf("no status: got %#v, %v; want a nil Status and the conditions", res, err)
	}
	_, err = h(context.Background(), &Task{})
	if err == nil || err.Error() != "try later" || IsTerminal(err) {
		t.Errorf("error: got %v; want the handler's transient error", err)
	}
	if Typed[greetSpec, greetStatus](nil) != nil {
		t.Error("Typed(nil) is not nil")
	}
}

func TestTypedRefusesASpecThatDoesNotFit(t *testing.T) {
	called := false
	h := Typed(func(context.Context, *TypedTask[greetSpec]) (*TypedResult[greetStatus], error) {
		called = true
		return nil, nil
	})
	_, err := h(context.Background(), &Task{Spec: json.RawMessage(`{"name":"x","replicas":"3"}`)})
	want := "converge: decode spec into converge.greetSpec: spec.replicas: want integer, got string"
	var de *DecodeError
	if err == nil || err.Error() != want || !IsTerminal(err) || !errors.As(err, &de) || de.Path != "spec.replicas" {
		t.Fatalf("error = %v (terminal %v); want terminal %q", err, IsTerminal(err), want)
	}
	if called {
		t.Fatal("the handler was called with a spec that did not decode")
	}
}

// TestTypedResultHasEveryResultField: a field added to Result must be added
// to TypedResult (and to untyped) too.
func TestTypedResultHasEveryResultField(t *testing.T) {
	typed := reflect.TypeFor[TypedResult[greetStatus]]()
	full := reflect.ValueOf(&Result{}).Elem()
	tr := reflect.New(typed).Elem()
	for i := range full.NumField() {
		f := full.Type().Field(i)
		tf, ok := typed.FieldByName(f.Name)
		if !ok {
			t.Errorf("TypedResult has no field %s", f.Name)
			continue
		}
		if f.Name == "Status" {
			tr.FieldByName("Status").Set(reflect.ValueOf(&greetStatus{Message: "m"}))
			continue
		}
		if tf.Type != f.Type {
			t.Errorf("TypedResult.%s is a %s; Result's is a %s", f.Name, tf.Type, f.Type)
			continue
		}
		// A value that is not the zero value, to see untyped copy it.
		v := reflect.New(f.Type).Elem()
		switch f.Type.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(f.Type, 1, 1))
		case reflect.Interface:
			v.Set(reflect.ValueOf("x"))
		default:
			t.Fatalf("extend this test for Result.%s (%s)", f.Name, f.Type)
		}
		tr.FieldByName(f.Name).Set(v)
	}
	if typed.NumField() != full.NumField() {
		t.Errorf("TypedResult has %d fields, Result %d", typed.NumField(), full.NumField())
	}
	res := tr.Addr().Interface().(*TypedResult[greetStatus]).untyped()
	got := reflect.ValueOf(res).Elem()
	for i := range got.NumField() {
		if got.Field(i).IsZero() {
			t.Errorf("untyped drops %s", got.Type().Field(i).Name)
		}
	}
}

func TestHandleServesTypedHandlers(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	Handle(w.Worker, "greeting", 1, "reconcile", func(_ context.Context, tt *TypedTask[greetSpec]) (*TypedResult[greetStatus], error) {
		return StatusResult(greetStatus{Message: "Hello, " + tt.Spec.Name}), nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, greetingTask(1, `{"name":"world"}`))
	if st := s.result(t).GetSuccess().GetStatus(); string(st) != `{"message":"Hello, world"}` {
		t.Fatalf("status = %s", st)
	}
	s.ack(t, lease(1))
	s.task(t, greetingTask(2, `{"name":7}`))
	e := s.result(t).GetError()
	if !e.GetTerminal() || !strings.Contains(e.GetMessage(), "spec.name: want string, got number") {
		t.Fatalf("error = %v; want a terminal one naming spec.name", e)
	}
}

func TestConfigAs(t *testing.T) {
	type cfg struct {
		Region string `json:"region"`
	}
	c, err := ConfigAs[cfg](&Task{Config: json.RawMessage(`{"region":"eu-1","other":1}`)})
	if err != nil || c.Region != "eu-1" {
		t.Fatalf("ConfigAs = %+v, %v", c, err)
	}
	if c, err := ConfigAs[cfg](&Task{}); err != nil || c != (cfg{}) {
		t.Fatalf("no config: %+v, %v; want the zero value", c, err)
	}
	_, err = ConfigAs[cfg](&Task{Config: json.RawMessage(`{"region":["eu"]}`)})
	if err == nil || IsTerminal(err) || !strings.Contains(err.Error(), "config.region: want string, got array") {
		t.Fatalf("bad config: %v (terminal %v); want a transient error naming config.region", err, IsTerminal(err))
	}
}
