package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/sdk-go/convergetest"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func TestParseReactions(t *testing.T) {
	got, err := parseReactions("bench.leaf:1:reconcile, bench.root:2:rollup")
	want := []reaction{{"bench.leaf", 1, "reconcile"}, {"bench.root", 2, "rollup"}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("parseReactions = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []struct{ in, want string }{
		{"", `entry 1 "": want kind:version:reaction`},
		{"a:1", `entry 1 "a:1": want kind:version:reaction`},
		{"a:1:r,b:x:r", `entry 2 "b:x:r": version "x" must be an integer >= 1`},
		{"a:0:r", `version "0" must be an integer >= 1`},
		{"a:1:r,a:1:r", `entry 2 "a:1:r": listed twice`},
	} {
		if _, err := parseReactions(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("parseReactions(%q) = %v; want an error containing %q", bad.in, err, bad.want)
		}
	}
}

// benchKind is a manifest like the benchmark's, built in Go: noop has no
// manifest file of its own.
func benchKind(t *testing.T, kind string, version int32, reaction string) *convergetest.Manifest {
	t.Helper()
	m, err := convergetest.NewManifest(&convergev1.KindManifest{Kind: kind, KindVersion: version,
		Reactions: []*convergev1.Reaction{{Name: reaction, Trigger: "specChange", Emits: []string{"status"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestHandlerReportsOK(t *testing.T) {
	task := convergetest.NewTask(t, benchKind(t, "bench.leaf", 1, "reconcile"), "reconcile", nil)
	for _, delay := range []time.Duration{0, time.Millisecond} {
		out, err := convergetest.Run(t, handler(delay, okStatus), task)
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Status) != `{"ok":true}` {
			t.Fatalf("status = %s; want {\"ok\":true}", out.Status)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := handler(time.Hour, okStatus)(ctx, task); err != context.Canceled {
		t.Fatalf("cancelled delay: error = %v; want context.Canceled", err)
	}
}

// The worker as main wires it serves every listed reaction, against a
// test server.
func TestWorkerServesTheListedReactions(t *testing.T) {
	reactions, err := parseReactions("bench.leaf:1:reconcile,bench.root:2:rollup")
	if err != nil {
		t.Fatal(err)
	}
	srv := convergetest.NewServer(t)
	w := convergetest.NewWorker(t, srv)
	register(w, reactions, 0, okStatus)
	convergetest.RunWorker(t, w)

	if got := srv.Subscription(t.Context()).GetReactions(); len(got) != 2 {
		t.Fatalf("subscribed to %v; want the 2 listed reactions", got)
	}
	leaf := convergetest.NewTask(t, benchKind(t, "bench.leaf", 1, "reconcile"), "reconcile", nil)
	root := convergetest.NewTask(t, benchKind(t, "bench.root", 2, "rollup"), "rollup", nil)
	srv.Send(leaf, root)
	for _, task := range []*converge.Task{leaf, root} {
		if r := srv.ResultFor(t.Context(), task); r.Err != nil || string(r.Outcome.Status) != `{"ok":true}` {
			t.Errorf("%s: %v, %v; want {\"ok\":true}", task.Kind, r.Outcome, r.Err)
		}
	}
}
