package fleet

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/stdworker/provider"
)

// fake registers a handler for every reaction, or fails.
type fake struct{ fail error }

func (fake) Name() string { return "fake" }

func (f fake) Register(_ context.Context, w *converge.Worker, s provider.Served, env provider.Env) error {
	if f.fail != nil {
		return f.fail
	}
	if env.Serve == nil || env.StateDir == "" {
		return errors.New("env lacks Serve or StateDir")
	}
	for _, r := range s.Manifest.GetReactions() {
		w.Handle(s.Manifest.GetKind(), int(s.Manifest.GetKindVersion()), r.GetName(),
			func(context.Context, *converge.Task) (*converge.Result, error) { return nil, nil })
	}
	return nil
}

func served(kind string) provider.Served {
	return provider.Served{Manifest: &convergev1.KindManifest{Kind: kind, KindVersion: 1,
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}}}
}

func TestStartStopAndDrain(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	state := t.TempDir()
	// Nothing listens there: the workers keep redialling until drained.
	f := New(ctx, Options{ServerURL: "http://127.0.0.1:1", StateDir: state, Log: slog.New(slog.DiscardHandler)})
	stopA, err := f.Start(t.Context(), fake{}, served("a"), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Start(t.Context(), fake{}, served("a"), 0); err == nil || !strings.Contains(err.Error(), "a@1 is already served") {
		t.Errorf("second Start of a@1: %v", err)
	}
	if _, err := f.Start(t.Context(), fake{fail: errors.New("nope")}, served("b"), 0); err == nil || !strings.Contains(err.Error(), "b@1 (provider fake): nope") {
		t.Errorf("failing Register: %v", err)
	}
	if _, err := f.Start(t.Context(), fake{}, served("c"), 0); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(state, "c@1")); err != nil || !st.IsDir() {
		t.Errorf("no state directory for c@1: %v", err)
	}
	stopA()
	if got := f.Serving(); len(got) != 1 || got[0] != "c@1" {
		t.Errorf("serving %v after stopping a@1, want [c@1]", got)
	}
	cancel()
	if err := f.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if _, err := f.Start(t.Context(), fake{}, served("d"), 0); err == nil || !strings.Contains(err.Error(), "stopping") {
		t.Errorf("Start after the fleet stopped: %v", err)
	}
}
