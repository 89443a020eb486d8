package app_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/app"
	"github.com/convergehq/converge/server/internal/broker"
	"github.com/convergehq/converge/server/internal/conctl"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/tlsconf"
)

const (
	opsID    = "spiffe://td/ns/ops/alice"
	workerID = "spiffe://td/ns/workers/w1"
	intruder = "spiffe://td/ns/dev/eve"
	apiAllow = "spiffe://td/ns/ops/*"
	wrkAllow = "spiffe://td/ns/workers/*"
)

// tlsServer starts a full server serving mutual TLS with ca as the client
// CA, admitting ops/* to the API and workers/* as workers.
func tlsServer(t *testing.T, ca *testkit.CA, srv testkit.CertFiles, clientAuth ...string) string {
	t.Helper()
	db := pgtest.New(t)
	auth := tlsconf.ClientAuthRequire
	if len(clientAuth) > 0 {
		auth = clientAuth[0]
	}
	a, err := app.Start(context.Background(), app.Config{
		DatabaseURL: db.URL, Listen: "127.0.0.1:0", Role: app.RoleAll,
		Broker: broker.Config{Lease: 2 * time.Second, HeartbeatInterval: 200 * time.Millisecond,
			PollInterval: 200 * time.Millisecond, Backoff: store.Backoff{Base: 50 * time.Millisecond, Max: 200 * time.Millisecond}},
		TLS: tlsconf.Config{CertFile: srv.CertFile, KeyFile: srv.KeyFile, ClientCAFile: ca.CertFile, ClientAuth: auth,
			AllowAPIIDs: []string{apiAllow}, AllowWorkerIDs: []string{wrkAllow}, CheckInterval: -1},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	return "https://" + a.Addr().String()
}

func wantDenied(t *testing.T, err error, parts ...string) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("err = %v, want PermissionDenied", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("err = %v, want it to name %q", err, p)
		}
	}
}

func TestTLSAndSPIFFEAllowlists(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	srv := ca.Server("server")
	base := tlsServer(t, ca, srv)
	ops := ca.Client("ops", opsID, time.Time{})
	wrk := ca.Client("worker", workerID, time.Time{})
	ctl := convergev1connect.NewControlServiceClient(testkit.TLSClient(t, ca, &ops), base)
	applyGreeting(t, ctl)
	ctx := context.Background()

	t.Run("conctl", func(t *testing.T) {
		env := map[string]string{"CONVERGE_SERVER": base, "CONVERGE_TLS_CA": ca.CertFile,
			"CONVERGE_TLS_CERT": ops.CertFile, "CONVERGE_TLS_KEY": ops.KeyFile}
		var out, errOut strings.Builder
		code := conctl.Run(ctx, []string{"list", "kinds"}, conctl.WithStdio(strings.NewReader(""), &out, &errOut),
			conctl.WithGetenv(func(k string) string { return env[k] }))
		if code != 0 || !strings.Contains(out.String(), "greeting") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
		// The same call with the worker's identity is refused by name.
		env["CONVERGE_TLS_CERT"], env["CONVERGE_TLS_KEY"] = wrk.CertFile, wrk.KeyFile
		out.Reset()
		errOut.Reset()
		code = conctl.Run(ctx, []string{"list", "kinds"}, conctl.WithStdio(strings.NewReader(""), &out, &errOut),
			conctl.WithGetenv(func(k string) string { return env[k] }))
		if code != 1 || !strings.Contains(errOut.String(), workerID) || !strings.Contains(errOut.String(), "api audience") {
			t.Fatalf("exit %d\nstderr:\n%s", code, errOut.String())
		}
	})

	t.Run("sdk worker", func(t *testing.T) {
		w, err := converge.NewWorker(base, converge.WithTLS(wrk.CertFile, wrk.KeyFile, ca.CertFile),
			converge.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			t.Fatal(err)
		}
		w.Handle("greeting", 1, "reconcile", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
			return &converge.Result{Status: map[string]any{"message": "hello over mTLS"}}, nil
		})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
		applyResource(t, ctl, "secure", map[string]any{"name": "x"})
		r := waitPhase(t, ctl, "secure", "Ready")
		if got := r.GetStatus().GetFields()["message"].GetStringValue(); got != "hello over mTLS" {
			t.Fatalf("status message %q", got)
		}
	})

	t.Run("identity not allowed", func(t *testing.T) {
		eve := ca.Client("eve", intruder, time.Time{})
		_, err := convergev1connect.NewControlServiceClient(testkit.TLSClient(t, ca, &eve), base).
			ListKinds(ctx, &convergev1.ListKindsRequest{})
		wantDenied(t, err, intruder, "api audience")

		// The operator's identity may not connect as a worker.
		stream, err := convergev1connect.NewWorkerServiceClient(testkit.TLSClient(t, ca, &ops), base).Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = stream.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
			WorkerName: "ops", Capacity: 1, Reactions: greetingReactions}}})
		_, err = stream.Receive()
		wantDenied(t, err, opsID, "worker audience")
		_ = stream.CloseRequest()
		_ = stream.CloseResponse()

		// REST and OpenAPI are the API audience too.
		for _, path := range []string{"/openapi.json", "/api/v1/kinds"} {
			resp, err := testkit.TLSClient(t, ca, &eve).Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), intruder) {
				t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
			}
		}
	})

	t.Run("kind workers list", func(t *testing.T) {
		_, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
			Kind: "vault", KindVersion: 1, Workers: []string{"spiffe://td/ns/workers/vault-*", "spiffe://td/ns/workers/vault"},
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := convergev1connect.NewWorkerServiceClient(testkit.TLSClient(t, ca, &wrk), base).Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_ = stream.Send(&convergev1.WorkerMessage{Msg: &convergev1.WorkerMessage_Subscribe{Subscribe: &convergev1.Subscribe{
			WorkerName: "w1", Capacity: 1, Reactions: []*convergev1.ReactionRef{{Kind: "vault", KindVersion: 1, Reaction: "reconcile"}}}}})
		_, err = stream.Receive()
		wantDenied(t, err, workerID, "kind vault v1", "workers list")
		_ = stream.CloseRequest()
		_ = stream.CloseResponse()

		vault := ca.Client("vault", "spiffe://td/ns/workers/vault", time.Time{})
		w, _ := subscribe(t, convergev1connect.NewWorkerServiceClient(testkit.TLSClient(t, ca, &vault), base), 1,
			[]*convergev1.ReactionRef{{Kind: "vault", KindVersion: 1, Reaction: "reconcile"}})
		w.Close()

		// A kind registered after a worker subscribed is checked at
		// dispatch: its task waits for a permitted worker.
		late := []*convergev1.ReactionRef{{Kind: "late", KindVersion: 1, Reaction: "reconcile"}}
		early, _ := connectWorkerServing(t, convergev1connect.NewWorkerServiceClient(testkit.TLSClient(t, ca, &wrk), base), 4, late)
		earlyTasks := make(chan *convergev1.Task, 16)
		go func() {
			// Ends when the test's cleanup cancels the stream.
			for {
				m, err := early.Receive()
				if err != nil {
					return
				}
				for _, task := range m.GetTasks().GetTasks() {
					earlyTasks <- task
				}
			}
		}()
		if _, err := ctl.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: &convergev1.KindManifest{
			Kind: "late", KindVersion: 1, Workers: []string{"spiffe://td/ns/workers/vault"},
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}},
		}}); err != nil {
			t.Fatal(err)
		}
		if _, err := ctl.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: "late", KindVersion: 1, Name: "r",
			Spec: mustStruct(t, map[string]any{})}); err != nil {
			t.Fatal(err)
		}
		permitted, _ := connectWorkerServing(t, convergev1connect.NewWorkerServiceClient(testkit.TLSClient(t, ca, &vault), base), 4, late)
		defer permitted.Close()
		got := make(chan *convergev1.Task, 1)
		go func() { got <- permitted.Task() }()
		select {
		case task := <-got:
			if task.GetKind() != "late" {
				t.Fatalf("task %v", task)
			}
		case task := <-earlyTasks:
			t.Fatalf("a worker outside the kind's workers list got its task %v", task)
		case <-time.After(1500 * time.Millisecond): // under the 2 s lease: no redispatch
			t.Fatal("the permitted worker did not get the late kind's task within 1.5 s")
		}
		select {
		case task := <-earlyTasks:
			t.Fatalf("a worker outside the kind's workers list got its task %v", task)
		default:
		}
	})

	t.Run("handshake refusals", func(t *testing.T) {
		other := testkit.NewCA(t, "other")
		stranger := other.Client("stranger", opsID, time.Time{})
		expired := ca.Client("expired", opsID, time.Now().Add(-time.Minute))
		for name, c := range map[string]*http.Client{
			"server not trusted":      testkit.TLSClient(t, other, &ops),
			"client cert of other CA": testkit.TLSClient(t, ca, &stranger),
			"no client cert":          testkit.TLSClient(t, ca, nil),
			"expired client cert":     testkit.TLSClient(t, ca, &expired),
		} {
			_, err := convergev1connect.NewControlServiceClient(c, base).ListKinds(ctx, &convergev1.ListKindsRequest{})
			if err == nil || connect.CodeOf(err) == connect.CodePermissionDenied {
				t.Errorf("%s: err = %v, want a failed handshake", name, err)
			}
		}
	})

	t.Run("rotation", func(t *testing.T) {
		servedCN := func() string {
			t.Helper()
			pool := ca.Pool()
			kp, err := tls.LoadX509KeyPair(ops.CertFile, ops.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			c, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			return c.ConnectionState().PeerCertificates[0].Subject.CommonName
		}
		if cn := servedCN(); cn != "server" {
			t.Fatalf("served %q before rotation", cn)
		}
		rotated := ca.Server("rotated")
		testkit.ReplaceFile(t, srv.CertFile, rotated.CertFile)
		testkit.ReplaceFile(t, srv.KeyFile, rotated.KeyFile)
		if cn := servedCN(); cn != "rotated" {
			t.Fatalf("served %q after rotation, want rotated", cn)
		}
		// Calls on new connections still work.
		fresh := convergev1connect.NewControlServiceClient(testkit.TLSClient(t, ca, &ops), base)
		if _, err := fresh.ListKinds(ctx, &convergev1.ListKindsRequest{}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTLSRequestModeAdmitsProbesOnly(t *testing.T) {
	ca := testkit.NewCA(t, "ca")
	base := tlsServer(t, ca, ca.Server("server"), tlsconf.ClientAuthRequest)
	ctx := context.Background()
	// Without a client certificate: the handshake succeeds, probes answer
	// (over HTTP/1.1 and HTTP/2 alike), the API refuses.
	anon := testkit.TLSClient(t, ca, nil)
	h1 := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	for proto, c := range map[string]*http.Client{"HTTP/2.0": anon, "HTTP/1.1": h1} {
		resp, err := c.Get(base + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Proto != proto {
			t.Fatalf("GET /healthz: %d over %s, want 200 over %s", resp.StatusCode, resp.Proto, proto)
		}
	}
	_, err := convergev1connect.NewControlServiceClient(anon, base).ListKinds(ctx, &convergev1.ListKindsRequest{})
	wantDenied(t, err, "without a SPIFFE ID", "api audience")
	ops := ca.Client("ops", opsID, time.Time{})
	if _, err := convergev1connect.NewControlServiceClient(testkit.TLSClient(t, ca, &ops), base).
		ListKinds(ctx, &convergev1.ListKindsRequest{}); err != nil {
		t.Fatal(err)
	}
}
