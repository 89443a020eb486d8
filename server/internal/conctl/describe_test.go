package conctl_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestDescribeResource(t *testing.T) {
	f, url := newFake(t)
	res := sampleResource()
	res.Failure.Terminal = false
	res.Failure.RetryAt = timestamppb.New(testNow.Add(20 * time.Second))
	res.Failure.Reason = "QuotaExceeded"
	f.add(res)
	for i := range 12 { // newest first, as the server returns them
		f.events = append(f.events, &convergev1.Event{
			Time: timestamppb.New(testNow.Add(-time.Duration(i) * time.Minute)), Namespace: "default", Kind: "greeting", Name: "hello-world",
			Type: "Warning", Reason: "HandlerFailed", Actor: "worker:greeter", Message: "attempt " + string(rune('a'+i)),
		})
	}
	f.events = append(f.events, &convergev1.Event{Namespace: "default", Kind: "greeting", Name: "other", Message: "not this one"})

	r := run(testContext(t), url, "", "describe", "resource", "greeting/hello-world")
	want := `Namespace:          default
Kind:               greeting v1
Name:               hello-world
UID:                uid-1
Labels:             team=web
                    tier=frontend
Created:            2026-11-29T09:00:00Z (3h ago)
Updated:            2026-11-29T11:55:00Z (5m ago)
Phase:              Failed
Generation:         3 (synced 2)
Healthy:            false
Reconciles:         4
Failure:
  Reason:           QuotaExceeded
  Message:          quota exceeded
  Attempts:         3
  Terminal:         false
  Generation:       3
  Retry at:         2026-11-29T12:00:20Z (in 20s)
Conditions:
  TYPE    STATUS   REASON          AGE   MESSAGE
  Ready   False    HandlerFailed   5m    quota exceeded
Spec:
  greeting: Hello
  replicas: 3
Status:             <none>
Events (last 10, oldest first):
  AGE   TYPE      REASON          ACTOR            MESSAGE
  9m    Warning   HandlerFailed   worker:greeter   attempt j
  8m    Warning   HandlerFailed   worker:greeter   attempt i
  7m    Warning   HandlerFailed   worker:greeter   attempt h
  6m    Warning   HandlerFailed   worker:greeter   attempt g
  5m    Warning   HandlerFailed   worker:greeter   attempt f
  4m    Warning   HandlerFailed   worker:greeter   attempt e
  3m    Warning   HandlerFailed   worker:greeter   attempt d
  2m    Warning   HandlerFailed   worker:greeter   attempt c
  60s   Warning   HandlerFailed   worker:greeter   attempt b
  0s    Warning   HandlerFailed   worker:greeter   attempt a
`
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}
}

func TestDescribeRefusesMachineOutput(t *testing.T) {
	_, url := newFake(t)
	r := run(testContext(t), url, "", "describe", "resource", "greeting/a", "-o", "json")
	want := "error: describe prints a report only; for json use: conctl get resource greeting/a -o json\nRun 'conctl describe resource --help' for usage.\n"
	if r.code != 1 || r.stderr != want {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
