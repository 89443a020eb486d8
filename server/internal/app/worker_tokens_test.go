package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/testkit"
)

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWorkersIdentifiedByBearerTokens: with authorization on, a worker
// proves who it is with a bearer token as an API caller does, and that
// identity is held to a kind's workers list exactly as a SPIFFE ID is, so
// the list holds without mutual TLS. A worker with no token, or one the
// token file does not know, is not admitted at all.
func TestWorkersIdentifiedByBearerTokens(t *testing.T) {
	base, client := authzServer(t)
	ctx := context.Background()
	if _, err := client("tok-admin").ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
		Kind: "vault", KindVersion: 1, Workers: []string{carolIdent},
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	vault := []*convergev1.ReactionRef{{Kind: "vault", KindVersion: 1, Reaction: "reconcile"}}
	h2c := testkit.H2C().Transport
	workers := func(token string) convergev1connect.WorkerServiceClient {
		return convergev1connect.NewWorkerServiceClient(&http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
			if token != "" {
				r = r.Clone(r.Context())
				r.Header.Set("Authorization", "Bearer "+token)
			}
			return h2c.RoundTrip(r)
		})}, base)
	}
	refused := func(token string, code connect.Code, parts ...string) {
		t.Helper()
		stream, err := workers(token).Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = stream.CloseResponse() }()
		_ = stream.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
			WorkerName: "w", Capacity: 1, Reactions: vault}}})
		_ = stream.CloseRequest()
		_, err = stream.Receive()
		if connect.CodeOf(err) != code {
			t.Fatalf("token %q: err = %v, want %v", token, err, code)
		}
		for _, p := range parts {
			if !strings.Contains(err.Error(), p) {
				t.Fatalf("token %q: err = %v, want it to name %q", token, err, p)
			}
		}
	}
	refused("", connect.CodeUnauthenticated, "bearer token", "--token-file")
	refused("tok-nobody", connect.CodeUnauthenticated, "--token-file")
	refused("tok-bob", connect.CodePermissionDenied, bobIdent, "kind vault v1", "workers list")

	// The identity in the list is admitted and given the kind's task.
	if _, err := client("tok-admin").ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "vault", KindVersion: 1, Name: "v",
		Spec: mustStruct(t, map[string]any{})}); err != nil {
		t.Fatal(err)
	}
	w, _ := subscribe(t, workers("tok-carol"), 1, vault)
	defer w.Close()
	if task := w.Task(); task.GetKind() != "vault" || task.GetResource().GetName() != "v" {
		t.Fatalf("task = %v, want vault/v", task)
	}
}
