package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
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

func TestHandlerReportsOK(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Millisecond} {
		res, err := handler(delay)(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(res.Status); string(got) != `{"ok":true}` {
			t.Fatalf("status = %s; want {\"ok\":true}", got)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := handler(time.Hour)(ctx, nil); err != context.Canceled {
		t.Fatalf("cancelled delay: error = %v; want context.Canceled", err)
	}
}
