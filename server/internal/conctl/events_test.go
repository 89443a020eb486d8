package conctl_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestEventsOfANamespaceOldestFirst(t *testing.T) {
	f, url := newFake(t)
	f.events = []*convergev1.Event{
		{Time: timestamppb.New(testNow.Add(-time.Minute)), Namespace: "default", Kind: "greeting", Name: "b", Type: "Normal", Reason: "Synced", Actor: "worker:w1", Message: "ok"},
		{Time: timestamppb.New(testNow.Add(-time.Hour)), Namespace: "default", Kind: "greeting", Name: "a", Type: "Normal", Reason: "Applied", Actor: "api:alice", Message: "created"},
		{Time: timestamppb.New(testNow), Namespace: "team-a", Kind: "greeting", Name: "c", Type: "Warning", Reason: "X", Actor: "system", Message: "elsewhere"},
	}
	r := run(testContext(t), url, "", "events")
	want := "" +
		"AGE   TYPE     REASON    OBJECT               ACTOR       MESSAGE\n" +
		"60m   Normal   Applied   default/greeting/a   api:alice   created\n" +
		"60s   Normal   Synced    default/greeting/b   worker:w1   ok\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr: %s", r.code, r.stdout, want, r.stderr)
	}

	r = run(testContext(t), url, "", "events", "greeting/b")
	want = "" +
		"AGE   TYPE     REASON   ACTOR       MESSAGE\n" +
		"60s   Normal   Synced   worker:w1   ok\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s", r.code, r.stdout, want)
	}
}
