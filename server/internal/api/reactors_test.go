package api_test

import (
	"context"
	"slices"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/notify"
)

// pagerKind is a reactor kind; watchedKind is an ordinary one.
const (
	pagerKind = `{
  "kind": "pager", "kind_version": 1,
  "reactions": [{"name": "page", "trigger": "reactor", "emits": ["sideEffect"]}]
}`
	watchedKind = `{
  "kind": "db", "kind_version": 1,
  "spec_schema": {"type": "object"},
  "reactions": [{"name": "reconcile", "trigger": "specChange", "emits": ["status"]}]
}`
)

func pageOnFailure() *convergev1.ReactorBinding {
	return &convergev1.ReactorBinding{Name: "page-on-failure", WatchKind: "db", Transitions: []string{"failed", "created"},
		ReactorKind: "pager", ReactorKindVersion: 1}
}

func TestReactorBindingAPI(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, watchedKind)
	h.kind(t, pagerKind)
	kinds, stop := h.bus.Subscribe(notify.Kinds)
	defer stop()

	res, err := h.ctl.ApplyReactorBinding(ctx, &convergev1.ApplyReactorBindingRequest{Binding: pageOnFailure()})
	if err != nil {
		t.Fatal(err)
	}
	b := res.GetBinding()
	if res.GetResult() != "created" || b.GetRevision() != 1 || b.GetCreatedAt() == nil ||
		!slices.Equal(b.GetTransitions(), []string{"created", "failed"}) {
		t.Fatalf("create = %s %v", res.GetResult(), b)
	}
	if !woken(kinds) {
		t.Fatal("creating a binding did not wake the emitters")
	}
	// The same transitions in another order are the same binding.
	again := pageOnFailure()
	again.Transitions = []string{"created", "failed"}
	if res, err := h.ctl.ApplyReactorBinding(ctx, &convergev1.ApplyReactorBindingRequest{Binding: again}); err != nil ||
		res.GetResult() != "unchanged" || res.GetBinding().GetRevision() != 1 {
		t.Fatalf("re-apply = %v, %v", res, err)
	}
	if woken(kinds) {
		t.Fatal("an unchanged binding woke the emitters")
	}
	edit := pageOnFailure()
	edit.Disabled, edit.LabelSelector = true, "env=prod"
	if res, err := h.ctl.ApplyReactorBinding(ctx, &convergev1.ApplyReactorBindingRequest{Binding: edit}); err != nil ||
		res.GetResult() != "configured" || res.GetBinding().GetRevision() != 2 || !res.GetBinding().GetDisabled() {
		t.Fatalf("edit = %v, %v", res, err)
	}
	got, err := h.ctl.GetReactorBinding(ctx, &convergev1.GetReactorBindingRequest{Name: "page-on-failure"})
	if err != nil || got.GetBinding().GetLabelSelector() != "env=prod" || got.GetBinding().GetRevision() != 2 {
		t.Fatalf("get = %v, %v", got, err)
	}
	list, err := h.ctl.ListReactorBindings(ctx, &convergev1.ListReactorBindingsRequest{WatchKind: "db"})
	if err != nil || len(list.GetBindings()) != 1 {
		t.Fatalf("list = %v, %v", list, err)
	}
	if list, err := h.ctl.ListReactorBindings(ctx, &convergev1.ListReactorBindingsRequest{WatchKind: "other"}); err != nil ||
		len(list.GetBindings()) != 0 {
		t.Fatalf("list of another kind = %v, %v", list, err)
	}

	_, err = h.ctl.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "pager", KindVersion: 1})
	lcRefused(t, "deleting a bound reactor kind", err, connect.CodeFailedPrecondition, "pager v1", `"page-on-failure"`)

	if _, err := h.ctl.DeleteReactorBinding(ctx, &convergev1.DeleteReactorBindingRequest{Name: "page-on-failure"}); err != nil {
		t.Fatal(err)
	}
	_, err = h.ctl.GetReactorBinding(ctx, &convergev1.GetReactorBindingRequest{Name: "page-on-failure"})
	lcRefused(t, "get after delete", err, connect.CodeNotFound, `"page-on-failure"`)
	_, err = h.ctl.DeleteReactorBinding(ctx, &convergev1.DeleteReactorBindingRequest{Name: "page-on-failure"})
	lcRefused(t, "delete twice", err, connect.CodeNotFound, `"page-on-failure"`)
	if _, err := h.ctl.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: "pager", KindVersion: 1}); err != nil {
		t.Fatalf("deleting the reactor kind once unbound: %v", err)
	}
}

func TestReactorBindingRefusals(t *testing.T) {
	h := newLCHarness(t, 0)
	ctx := context.Background()
	h.kind(t, watchedKind)
	h.kind(t, pagerKind)
	for _, c := range []struct {
		what  string
		edit  func(*convergev1.ReactorBinding)
		parts []string
	}{
		{"missing reactor kind", func(b *convergev1.ReactorBinding) { b.ReactorKind = "nope" },
			[]string{"binding.reactor_kind", "nope v1", "not registered"}},
		{"reactor kind without a reactor reaction", func(b *convergev1.ReactorBinding) { b.ReactorKind = "db" },
			[]string{"binding.reactor_kind", "db v1", `no reaction with trigger "reactor"`}},
		{"missing watched kind", func(b *convergev1.ReactorBinding) { b.WatchKind = "ghost" },
			[]string{"binding.watch_kind", "ghost"}},
		{"missing watched version", func(b *convergev1.ReactorBinding) { b.WatchKindVersion = 4 },
			[]string{"binding.watch_kind_version", "db v4"}},
		{"bad selector", func(b *convergev1.ReactorBinding) { b.LabelSelector = "env in prod" },
			[]string{"binding.label_selector", "parenthesised"}},
		{"selector with deleted", func(b *convergev1.ReactorBinding) {
			b.LabelSelector, b.Transitions = "env=prod", []string{"failed", "deleted"}
		}, []string{"binding.transitions", `"deleted"`, "label_selector"}},
		{"unknown transition", func(b *convergev1.ReactorBinding) { b.Transitions = []string{"exploded"} },
			[]string{"transitions"}},
		{"no transition", func(b *convergev1.ReactorBinding) { b.Transitions = nil },
			[]string{"transitions"}},
		{"bad name", func(b *convergev1.ReactorBinding) { b.Name = "Page On Failure" },
			[]string{"name"}},
	} {
		b := pageOnFailure()
		c.edit(b)
		_, err := h.ctl.ApplyReactorBinding(ctx, &convergev1.ApplyReactorBindingRequest{Binding: b})
		lcRefused(t, c.what, err, connect.CodeInvalidArgument, c.parts...)
	}
	list, err := h.ctl.ListReactorBindings(ctx, &convergev1.ListReactorBindingsRequest{})
	if err != nil || len(list.GetBindings()) != 0 {
		t.Fatalf("refused applies left bindings: %v, %v", list, err)
	}
}
