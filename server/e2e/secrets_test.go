//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/secret"
)

// The clear values of the secrets test: none may appear anywhere but in
// the tasks of the workers entitled to them and in a read-secrets call.
const (
	adminPassword = "adm1n-Pw-7f3c9e" // a client writes it into sec.db's spec
	dbPassword    = "db-Pw-b81d44a2"  // sec.db's worker reports it in its status
	rotatedPw     = "adm1n-Pw-2nd-55d1"
)

// secretKinds: sec.db (a database: a secret admin_password in its spec,
// a secret password in its status), sec.app (an app taking the password
// into a secret spec field, and a connection string computed from it into
// another), and sec.stack composing one of each with the flows.
func secretKinds(t *testing.T) []*convergev1.KindManifest {
	str := map[string]any{"type": "string"}
	secretStr := map[string]any{"type": "string", "writeOnly": true}
	obj := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	}
	leaf := func(kind string, spec, status map[string]any) *convergev1.KindManifest {
		return &convergev1.KindManifest{Kind: kind, KindVersion: 1, Owner: "e2e",
			SpecSchema: mustStruct(t, spec), StatusSchema: mustStruct(t, status),
			Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}}
	}
	return []*convergev1.KindManifest{
		leaf("sec.db", obj(map[string]any{"size": str, "admin_password": secretStr}),
			obj(map[string]any{"host": str, "password": map[string]any{"type": "string", "x-converge-secret": true}})),
		leaf("sec.app", obj(map[string]any{"db_host": str, "db_password": secretStr, "dsn": secretStr, "note": str}),
			obj(map[string]any{"connected": map[string]any{"type": "boolean"}})),
		{Kind: "sec.stack", KindVersion: 1, Owner: "e2e", SpecSchema: mustStruct(t, obj(map[string]any{"admin_password": secretStr, "leak": map[string]any{"type": "boolean"}})),
			Reactions: []*convergev1.Reaction{{Name: "compose", Trigger: "specChange", Emits: []string{"children", "edges"}}}},
	}
}

// secretWorkers serves the three kinds in this process through the Go
// SDK and keeps what each handler received.
type secretWorkers struct {
	mu       sync.Mutex
	received map[string][]map[string]any // "kind/name" -> specs received
}

func (w *secretWorkers) got(kind, name string) []map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]map[string]any(nil), w.received[kind+"/"+name]...)
}

func (w *secretWorkers) start(t *testing.T, url string) {
	t.Helper()
	wk, err := converge.NewWorker(url, converge.WithName("secret-workers"), converge.WithLogger(slog.New(slog.DiscardHandler)),
		converge.WithReconnectBackoff(20*time.Millisecond, 300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	note := func(task *converge.Task) map[string]any {
		var spec map[string]any
		_ = json.Unmarshal(task.Spec, &spec)
		w.mu.Lock()
		w.received[task.Kind+"/"+task.Name] = append(w.received[task.Kind+"/"+task.Name], spec)
		w.mu.Unlock()
		return spec
	}
	wk.Handle("sec.db", 1, "reconcile", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
		note(task)
		return &converge.Result{Status: map[string]any{"host": "db.internal", "password": dbPassword}}, nil
	})
	wk.Handle("sec.app", 1, "reconcile", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
		spec := note(task)
		return &converge.Result{Status: map[string]any{"connected": spec["db_password"] == dbPassword}}, nil
	})
	wk.Handle("sec.stack", 1, "compose", func(_ context.Context, task *converge.Task) (*converge.Result, error) {
		spec := note(task)
		to := "/db_password"
		if spec["leak"] == true {
			to = "/note" // a secret into a field that is not secret: refused
		}
		db, app := converge.RefTo("sec.db", "db"), converge.RefTo("sec.app", "app")
		return &converge.Result{
			Children: []converge.Child{
				{Kind: "sec.db", KindVersion: 1, Name: "db", Spec: map[string]any{"size": "small", "admin_password": spec["admin_password"]}},
				{Kind: "sec.app", KindVersion: 1, Name: "app", Spec: map[string]any{"note": "plain"}},
			},
			Edges: []converge.Edge{converge.DependsOn(app, db,
				converge.FlowFrom("/host", "/db_host"),
				converge.FlowFrom("/password", to),
				converge.FlowExpr(`"postgres://app:" + status.password + "@" + status.host`, "/dsn"))},
		}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = wk.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestSecretsStaySecret is the done-when test of secrets: a secret flows
// from a database's status into an app's secret spec field, the app's
// worker receives it in clear, and no API response, Watch event, history
// diff, event, UI page, server log line nor pg_dump of the database holds
// a clear value; a read-secrets call returns them and is an event.
func TestSecretsStaySecret(t *testing.T) {
	begin(t)
	key, err := secret.NewKeyText()
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.New(t)
	srv := startServerEnv(t, db.URL, fast, []string{secret.EnvVar + "=" + key}, "--log-level", "debug")
	c := srv.api
	changes := watchChanges(t, c)
	for _, m := range secretKinds(t) {
		applyKind(t, c, m)
	}
	workers := &secretWorkers{received: map[string][]map[string]any{}}
	workers.start(t, srv.url)

	apply := func(kind, name string, spec map[string]any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if _, err := c.ApplyResource(ctx, &convergev1.ApplyResourceRequest{Kind: kind, KindVersion: 1, Name: name, Spec: mustStruct(t, spec)}); err != nil {
			t.Fatalf("apply %s/%s: %v", kind, name, err)
		}
	}
	apply("sec.stack", "shop", map[string]any{"admin_password": adminPassword})
	waitPhase(t, c, "sec.stack", "shop", "Ready")
	app := waitPhase(t, c, "sec.app", "app", "Ready")

	// The app's worker got the flowed secret, and the computed one, in clear.
	got := workers.got("sec.app", "app")
	last := got[len(got)-1]
	if last["db_password"] != dbPassword || last["dsn"] != "postgres://app:"+dbPassword+"@db.internal" || last["db_host"] != "db.internal" {
		t.Fatalf("the app's worker received %v, want the password and the dsn in clear", last)
	}
	if d := workers.got("sec.db", "db"); d[len(d)-1]["admin_password"] != adminPassword {
		t.Fatalf("the database's worker received %v, want its admin password in clear", d[len(d)-1])
	}
	if !app.GetStatus().GetFields()["connected"].GetBoolValue() {
		t.Errorf("the app reports it did not connect: %v", app.GetStatus())
	}
	marker := app.GetSpec().GetFields()["db_password"].GetStringValue()
	if !secret.IsMarker(marker) {
		t.Errorf("the app's spec shows db_password as %q, want the redaction marker", marker)
	}

	// A second resource, changed once, for history: its diff tells the
	// secret changed without showing it.
	apply("sec.db", "solo", map[string]any{"size": "small", "admin_password": adminPassword})
	waitPhase(t, c, "sec.db", "solo", "Ready")
	apply("sec.db", "solo", map[string]any{"size": "large", "admin_password": rotatedPw})
	waitResource(t, c, "sec.db", "solo", "generation 2 Ready", rawTimeout, func(r *convergev1.Resource) bool {
		return r.GetGeneration() == 2 && r.GetSyncedGeneration() == 2 && r.GetPhase() == "Ready"
	})
	hist := conctl(t, srv, "", "history", "sec.db/solo")
	if hist.code != 0 || !strings.Contains(hist.stdout, "admin_password") || !strings.Contains(hist.stdout, secret.MarkerPrefix) {
		t.Errorf("conctl history does not show the secret changing:\n%s", hist)
	}

	// A flow from a secret into a field that is not secret is refused,
	// naming both paths.
	apply("sec.stack", "leaky", map[string]any{"admin_password": adminPassword, "leak": true})
	leaky := waitPhase(t, c, "sec.stack", "leaky", "Failed")
	if msg := explain(leaky); !strings.Contains(msg, "/password") || !strings.Contains(msg, "/note") || !strings.Contains(msg, "not secret") {
		t.Errorf("the leaky composition failed with %q, want a refusal naming /password and /note", msg)
	}

	// Everything a reader can see, gathered as JSON text.
	var seen strings.Builder
	add := func(what string, m proto.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		b, _ := protojson.Marshal(m)
		seen.WriteString(what + ": " + string(b) + "\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	for _, ref := range [][2]string{{"sec.stack", "shop"}, {"sec.db", "db"}, {"sec.app", "app"}, {"sec.db", "solo"}, {"sec.stack", "leaky"}} {
		r, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Kind: ref[0], Name: ref[1]})
		add("get "+ref[1], r, err)
		h, err := c.GetResourceHistory(ctx, &convergev1.GetResourceHistoryRequest{Kind: ref[0], Name: ref[1]})
		add("history "+ref[1], h, err)
		recs, err := c.ListTaskRecords(ctx, &convergev1.ListTaskRecordsRequest{Kind: ref[0], Name: ref[1]})
		add("task records "+ref[1], recs, err)
		for _, rec := range recs.GetRecords() {
			full, err := c.GetTaskRecord(ctx, &convergev1.GetTaskRecordRequest{Id: rec.GetId()})
			add("task record", full, err)
		}
		ev, err := c.ListEvents(ctx, &convergev1.ListEventsRequest{Kind: ref[0], Name: ref[1]})
		add("events "+ref[1], ev, err)
		ex, err := c.ExplainResource(ctx, &convergev1.ExplainResourceRequest{Kind: ref[0], Name: ref[1]})
		add("explain "+ref[1], ex, err)
	}
	tree, err := c.GetResourceTree(ctx, &convergev1.GetResourceTreeRequest{Kind: "sec.stack", Name: "shop"})
	add("tree", tree, err)
	graph, err := c.GetResourceGraph(ctx, &convergev1.GetResourceGraphRequest{Kind: "sec.stack", Name: "shop"})
	add("graph", graph, err)
	list, err := c.ListResources(ctx, &convergev1.ListResourcesRequest{})
	add("list", list, err)
	changes.mu.Lock()
	for _, ch := range changes.changes {
		add("watch", ch, nil)
	}
	changes.mu.Unlock()
	for _, args := range [][]string{{"get", "sec.app/app", "-o", "yaml"}, {"describe", "sec.db/db"}, {"tasks", "sec.app/app"}, {"events", "sec.db/solo"}} {
		seen.WriteString(conctl(t, srv, "", args...).all())
	}
	seen.WriteString(hist.all())
	for _, page := range []string{"/", "/ui/", "/api/v1/namespaces/default/resources/sec.app/app", "/api/v1/namespaces/default/resources/sec.db/db/history"} {
		seen.WriteString(httpGet(t, srv.url+page))
	}
	if !strings.Contains(seen.String(), secret.MarkerPrefix) {
		t.Error("no output shows the redaction marker; the test reads the wrong outputs")
	}
	dump := pgDump(t, db.URL)
	if !strings.Contains(dump, `"$secret"`) {
		t.Error("the dump holds no sealed value; the test dumps the wrong database")
	}
	for _, clear := range []string{adminPassword, dbPassword, rotatedPw} {
		for what, text := range map[string]string{"an API or UI output": seen.String(), "the server's log": srv.proc.output(), "pg_dump": dump} {
			if i := strings.Index(text, clear); i >= 0 {
				t.Errorf("%s holds the clear secret %q: ...%s...", what, clear, text[max(0, i-300):min(len(text), i+100)])
			}
		}
	}

	// read-secrets returns the clear values and records who read them.
	read := conctl(t, srv, "", "secrets", "read", "sec.db/solo", "--reason", "e2e check")
	if read.code != 0 || !strings.Contains(read.stdout, rotatedPw) {
		t.Fatalf("conctl secrets read did not return the clear value:\n%s", read)
	}
	ev := lastEvent(t, c, "sec.db", "solo", "SecretsRead")
	if !strings.Contains(ev.GetMessage(), "e2e check") || ev.GetActor() == "" {
		t.Errorf("the read's event = %v, want the reason and the actor", ev)
	}
	if i := strings.Index(srv.proc.output(), rotatedPw); i >= 0 {
		t.Errorf("the server logged the secret a read-secrets call returned")
	}
}

// httpGet returns the body of a GET, for grepping.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// pgDump dumps the database (schema and data) as SQL text, with the
// pg_dump beside the test cluster's binaries or on PATH.
func pgDump(t *testing.T, url string) string {
	t.Helper()
	path, err := exec.LookPath("pg_dump")
	if dir, derr := devpg.FindOrInstall(context.Background(), io.Discard); derr == nil {
		if p := filepath.Join(dir, "pg_dump"); func() bool { _, e := os.Stat(p); return e == nil }() {
			path, err = p, nil
		}
	}
	if err != nil {
		t.Fatalf("the secrets test dumps the database, and finds no pg_dump: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--dbname", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}
