package store_test

import (
	"maps"
	"testing"
	"time"

	"github.com/convergehq/converge/server/internal/labels"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestCountResources(t *testing.T) {
	s, ctx := newStore(t)
	rev := applyKind(t, s, "leaf", store.Policy{})
	for _, in := range []struct{ name, labels string }{
		{"a", `{"team":"x"}`}, {"b", `{"team":"y"}`}, {"c", `{}`},
	} {
		if _, _, err := s.ApplyResources(ctx, "t", []store.ApplyInput{{Namespace: "default", Kind: "leaf", KindVersion: 1,
			Name: in.name, Labels: []byte(in.labels), Spec: []byte(`{}`), KindRevision: rev}}); err != nil {
			t.Fatal(err)
		}
	}
	// a becomes Ready; c is quarantined.
	claimed, err := s.Claim(ctx, "m1", time.Minute, []store.Want{{Kind: "leaf", Version: 1, Trigger: trigger.SpecChange, N: 1}})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d tasks, %v", len(claimed), err)
	}
	// Claim order is not the test's business: finish whichever came.
	c := claimed[0]
	if _, err := s.ApplyOutcomes(ctx, []store.Outcome{{Lease: c.Lease, Actor: "w", Status: []byte(`{}`)}}, fast); err != nil {
		t.Fatal(err)
	}
	quarantined := "c"
	if c.Name == "c" {
		quarantined = "b"
	}
	if _, _, err := s.QuarantineResource(ctx, "t", store.ResourceKey{Namespace: "default", Kind: "leaf", Name: quarantined}, "test"); err != nil {
		t.Fatal(err)
	}
	count := func(f store.ListFilter) map[string]int64 {
		t.Helper()
		got, err := s.CountResources(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := map[string]int64{"Ready": 1, "Quarantined": 1, "Reconciling": 1}
	if got := count(store.ListFilter{}); !maps.Equal(got, want) {
		t.Fatalf("all: %v, want %v", got, want)
	}
	if got := count(store.ListFilter{Kind: "nosuch"}); len(got) != 0 {
		t.Fatalf("kind nosuch: %v, want none", got)
	}
	sel, err := labels.Parse("team")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, v := range count(store.ListFilter{Selector: sel}) {
		n += v
	}
	if n != 2 {
		t.Fatalf("label team: %d resources, want 2", n)
	}
	if got := count(store.ListFilter{Phases: []string{"Ready"}}); !maps.Equal(got, map[string]int64{"Ready": 1}) {
		t.Fatalf("phase Ready: %v", got)
	}
	var names []string
	rs, _, err := s.ListResources(ctx, store.ListFilter{NameContains: "b", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		names = append(names, r.Name)
	}
	if len(names) != 1 || names[0] != "b" {
		t.Fatalf("name contains b: %v, want [b]", names)
	}
	if got := count(store.ListFilter{NameContains: "zz"}); len(got) != 0 {
		t.Fatalf("name contains zz: %v, want none", got)
	}
}
