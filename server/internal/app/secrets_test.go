package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/secret"
)

// TestSecretKeysAtStartAndRotation: secrets need a key; a start without
// the key, or with a wrong one, over a database holding sealed values is
// refused; a new current key re-seals everything in the background, the
// converge_secret_stale_rows metric falls to 0, and the old key can go.
func TestSecretKeysAtStartAndRotation(t *testing.T) {
	db := pgtest.New(t)
	keyA, keyB := newKeyText(t), newKeyText(t)
	start := func(keys string) (*app.App, error) {
		cfg := app.Config{DatabaseURL: db.URL, Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0", Role: app.RoleAll,
			RotateInterval: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if keys != "" {
			parsed, err := secret.ParseKeys(keys)
			if err != nil {
				t.Fatal(err)
			}
			cfg.SecretKeys = parsed
		}
		a, err := app.Start(context.Background(), cfg)
		if err == nil {
			t.Cleanup(func() { _ = a.Stop() })
		}
		return a, err
	}
	mustStart := func(keys string) (*app.App, convergev1connect.ControlServiceClient) {
		t.Helper()
		a, err := start(keys)
		if err != nil {
			t.Fatal(err)
		}
		return a, convergev1connect.NewControlServiceClient(http.DefaultClient, "http://"+a.Addr().String())
	}
	kind := &convergev1.KindManifest{Kind: "vault.entry", KindVersion: 1,
		SpecSchema: mustStruct(t, map[string]any{"type": "object", "properties": map[string]any{
			"name": map[string]any{"type": "string"}, "value": map[string]any{"type": "string", "writeOnly": true}}}),
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}}

	a, ctl := mustStart("")
	_, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: kind})
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "no secret key") {
		t.Fatalf("ApplyKind of a secret kind without a key = %v, want FailedPrecondition naming the missing key", err)
	}
	_ = a.Stop()

	a, ctl = mustStart(keyA)
	if _, err := ctl.ApplyKind(context.Background(), &convergev1.ApplyKindRequest{Manifest: kind}); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "vault.entry", KindVersion: 1, Name: "e",
		Spec: mustStruct(t, map[string]any{"name": "db", "value": "s3cr3t-value"})}); err != nil {
		t.Fatal(err)
	}
	// A second spec stores the first as a revision: two sealed rows, the
	// resource and its earlier revision (the current one is its row).
	if _, err := ctl.ApplyResource(context.Background(), &convergev1.ApplyResourceRequest{Kind: "vault.entry", KindVersion: 1, Name: "e",
		Spec: mustStruct(t, map[string]any{"name": "db", "value": "s3cr3t-value-2"})}); err != nil {
		t.Fatal(err)
	}
	before := markerOf(t, ctl)
	_ = a.Stop()

	for _, c := range []struct{ keys, want string }{
		{"", "no secret key"},
		{keyB, "do not include"},
	} {
		if _, err := start(c.keys); err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), keyA) {
			t.Errorf("start with keys %q = %v, want a refusal containing %q (and no key)", c.keys, err, c.want)
		}
	}

	a, ctl = mustStart(keyB + "\n" + keyA)
	deadline := time.Now().Add(20 * time.Second)
	for {
		m := scrape(t, a)
		if m["converge_secret_stale_rows"] == 0 && m["converge_secret_resealed_rows_total"] >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rotation did not finish: stale %v resealed %v", m["converge_secret_stale_rows"], m["converge_secret_resealed_rows_total"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after := markerOf(t, ctl); after == before {
		t.Errorf("the marker %s did not change with the key: the value was not re-sealed", after)
	}
	_ = a.Stop()
	// Retry: the pass that counts 0 drops the retired data key right after.
	deadline = time.Now().Add(10 * time.Second)
	for {
		a, err := start(keyB)
		if err == nil {
			_ = a.Stop()
			break
		}
		if time.Now().After(deadline) || errors.Is(err, context.Canceled) {
			t.Fatalf("start with the new key alone after rotation: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func newKeyText(t *testing.T) string {
	t.Helper()
	k, err := secret.NewKeyText()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func markerOf(t *testing.T, ctl convergev1connect.ControlServiceClient) string {
	t.Helper()
	r, err := ctl.GetResource(context.Background(), &convergev1.GetResourceRequest{Kind: "vault.entry", Name: "e"})
	if err != nil {
		t.Fatal(err)
	}
	m := r.GetResource().GetSpec().GetFields()["value"].GetStringValue()
	if !secret.IsMarker(m) {
		t.Fatalf("spec value = %q, want the redaction marker", m)
	}
	return m
}
