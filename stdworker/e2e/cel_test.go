//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// celExample starts converge dev, applies the std kinds and the stdcel
// example's leaf kinds, and starts stdworker with the example's
// configuration (std.graph by stdcel, the leaves by leaf.sh).
func celExample(t *testing.T) (*dev, *proc) {
	t.Helper()
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("skipped: the stdcel example's leaf.sh needs jq, which is not on PATH")
	}
	d := startDev(t)
	d.kindsApply(t)
	kinds, err := os.ReadFile(repoPath(t, "stdworker/examples/stdcel/kinds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d.apply(t, string(kinds))
	w := d.stdworker(t, "--config", repoPath(t, "stdworker/examples/stdcel/stdworker.yaml"))
	return d, w
}

func readExample(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(repoPath(t, "stdworker/examples/stdcel/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestCelGraphComposes: applying the webapp graph defines and serves the
// kind webapp v1; an instance's database is created first, its address
// flows into the service (which refuses to run without it, terminally),
// and the instance becomes Ready with its status projected from the
// children. includeWhen adds the cache when the instance asks for it.
func TestCelGraphComposes(t *testing.T) {
	d, _ := celExample(t)
	d.apply(t, readExample(t, "graph.yaml"))
	g := d.waitPhase(t, "std.graph", "webapp", client.PhaseReady, time.Minute)
	serving, _ := statusOf(t, g)["serving"].(map[string]any)
	if serving["kind"] != "webapp" || serving["version"] != float64(1) {
		t.Fatalf("graph status %v, want serving webapp v1", statusOf(t, g))
	}
	k, err := d.api.GetKind(t.Context(), &convergev1.GetKindRequest{Kind: "webapp", KindVersion: 1})
	if err != nil {
		t.Fatalf("the graph did not apply kind webapp v1: %v", err)
	}
	if k.GetManifest().GetOwner() != "std.graph/default/webapp" {
		t.Errorf("webapp v1 owner %q", k.GetManifest().GetOwner())
	}

	d.apply(t, readExample(t, "instance.yaml"))
	root := d.waitFor(t, "webapp", "shop", "Ready with a projected status", 90*time.Second, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["url"] != nil
	})
	st := statusOf(t, root)
	want := map[string]any{"url": "https://shop.apps.internal", "database": "postgres://shop-db.db.internal:5432/shop", "replicas": float64(3)}
	for k, v := range want {
		if st[k] != v {
			t.Errorf("status.%s = %v, want %v (status %v)", k, st[k], v, st)
		}
	}
	if _, ok := st["cache"]; ok {
		t.Errorf("status.cache = %v, but the cache is not included", st["cache"])
	}
	db := d.get(t, "demo.database", "shop-db")
	if db.GetPhase() != client.PhaseReady || db.GetSpec().GetFields()["size_gb"].GetNumberValue() != 30 {
		t.Errorf("database:\n%s", show(db))
	}
	svc := d.get(t, "demo.service", "shop")
	if url := svc.GetSpec().GetFields()["database_url"].GetStringValue(); url != "postgres://shop-db.db.internal:5432/shop" {
		t.Errorf("service spec.database_url = %q:\n%s", url, show(svc))
	}
	// leaf.sh fails terminally on an empty database_url: the service ran
	// once, after the value flowed in.
	if svc.GetPhase() != client.PhaseReady || svc.GetReconciles() != 1 {
		t.Errorf("service ran before its database's address arrived:\n%s", show(svc))
	}
	if svc.GetLabels()["app"] != "shop" || svc.GetLabels()["stdcel.converge.dev/resource"] != "app" {
		t.Errorf("service labels %v", svc.GetLabels())
	}

	d.apply(t, strings.Replace(readExample(t, "instance.yaml"), "replicas: 3", "replicas: 3\n  cache: true", 1))
	root = d.waitFor(t, "webapp", "shop", "a projected cache endpoint", 90*time.Second, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["cache"] != nil
	})
	if got := statusOf(t, root)["cache"]; got != "redis://shop-cache.cache.internal:6379" {
		t.Errorf("status.cache = %v", got)
	}
}

// TestCelGraphTypo: a graph with misspelled fields fails terminally at
// apply, naming each path and the position in the expression, and defines
// no kind.
func TestCelGraphTypo(t *testing.T) {
	d, _ := celExample(t)
	d.apply(t, readExample(t, "typo.yaml"))
	g := d.waitPhase(t, "std.graph", "typo", client.PhaseFailed, time.Minute)
	msg := g.GetFailure().GetMessage()
	for _, want := range []string{
		"resources[1].template.spec.image:1:12: undefined field 'imgae'",
		"resources[1].template.spec.database_url:1:10: undefined field 'hots'",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure message lacks %q:\n%s", want, msg)
		}
	}
	if !g.GetFailure().GetTerminal() {
		t.Errorf("the failure is not terminal:\n%s", show(g))
	}
	if _, err := d.api.GetKind(t.Context(), &convergev1.GetKindRequest{Kind: "webapp-typo", KindVersion: 1}); err == nil {
		t.Errorf("a rejected graph applied its kind")
	}
}

// TestCelGraphSurvivesRestart: a stdworker started after the graph was
// applied serves the graph's kind too (it follows std.graph resources),
// and deleting the graph stops serving the kind but leaves it.
func TestCelGraphSurvivesRestart(t *testing.T) {
	d, w := celExample(t)
	d.apply(t, readExample(t, "graph.yaml"))
	d.waitPhase(t, "std.graph", "webapp", client.PhaseReady, time.Minute)
	w.kill(t)

	d.stdworker(t, "--config", repoPath(t, "stdworker/examples/stdcel/stdworker.yaml"))
	d.apply(t, readExample(t, "instance.yaml"))
	d.waitPhase(t, "webapp", "shop", client.PhaseReady, 90*time.Second)

	if res := d.conctl(t, "", "delete", "resource", "std.graph/webapp"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	ctx := t.Context()
	_, err := d.api.WaitFor(ctx, "", "std.graph", "webapp", func(*convergev1.Resource) bool { return false })
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("the graph was not deleted: %v", err)
	}
	if _, err := d.api.GetKind(ctx, &convergev1.GetKindRequest{Kind: "webapp", KindVersion: 1}); err != nil {
		t.Errorf("deleting the graph removed its kind: %v", err)
	}
	// Nothing serves webapp v1 now: a new instance waits, parked.
	d.apply(t, strings.Replace(readExample(t, "instance.yaml"), "name: shop", "name: orphan", 1))
	r := d.waitFor(t, "webapp", "orphan", "a parked condition", time.Minute, func(r *convergev1.Resource) bool {
		for _, c := range r.GetConditions() {
			if c.GetType() == "WorkerAvailable" && c.GetStatus() == "False" {
				return true
			}
		}
		return false
	})
	if r.GetPhase() == client.PhaseReady {
		t.Errorf("an instance became Ready with no graph serving it:\n%s", show(r))
	}
}

// TestCelExample runs stdworker/examples/stdcel/run.sh, the one-command
// demo, against the binaries under test.
func TestCelExample(t *testing.T) {
	begin(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("skipped: the stdcel example needs jq, which is not on PATH")
	}
	res := runExample(t, "stdworker/examples/stdcel/run.sh")
	for _, want := range []string{
		"database_url: postgres://shop-db.db.internal:5432/shop",
		"url: https://shop.apps.internal",
		"resources[1].template.spec.image:1:12: undefined field 'imgae'",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("run.sh printed no %q\n%s", want, res)
		}
	}
}

// gatedGraph defines kind gated v1: the service reads the database's host,
// and waits until the database's readyWhen holds (its port is the one the
// instance asks for). replicas is the service's replica count.
func gatedGraph(replicas int) string {
	return `type: resource
kind: std.graph
kind_version: 1
name: gated
spec:
  kind: gated
  version: 1
  spec_fields: {port: "integer | required"}
  resources:
    - id: db
      kind: demo.database
      version: 1
      template: {spec: {engine: postgres}}
      readyWhen: ["${db.status.port == schema.spec.port}"]
    - id: app
      kind: demo.service
      version: 1
      template:
        spec: {image: app, replicas: ` + strconv.Itoa(replicas) + `, database_url: "${db.status.host}"}
  status:
    host: ${db.status.host}
`
}

// TestCelReadyWhenAndUpdates: a dependent waits for its dependency's
// readyWhen; a new instance spec composes again; a changed graph
// recomposes its instances.
func TestCelReadyWhenAndUpdates(t *testing.T) {
	d, _ := celExample(t)
	d.apply(t, gatedGraph(1))
	d.waitPhase(t, "std.graph", "gated", client.PhaseReady, time.Minute)
	instance := "type: resource\nkind: gated\nkind_version: 1\nname: g1\nspec: {port: %d}\n"
	d.apply(t, fmt.Sprintf(instance, 1))
	celWaitExists(t, d, "demo.service", "g1-app")
	app := d.waitFor(t, "demo.service", "g1-app", "waiting for its database", time.Minute, func(r *convergev1.Resource) bool {
		return strings.Contains(r.GetWaiting(), "demo.database/g1-db")
	})
	if app.GetPhase() == client.PhaseReady || app.GetReconciles() != 0 {
		t.Fatalf("the service ran although the database's readyWhen is false:\n%s", show(app))
	}
	if root := d.get(t, "gated", "g1"); root.GetPhase() == client.PhaseReady {
		t.Fatalf("the instance is Ready while a child waits:\n%s", show(root))
	}

	d.apply(t, fmt.Sprintf(instance, 5432))
	d.waitPhase(t, "demo.service", "g1-app", client.PhaseReady, time.Minute)
	root := d.waitFor(t, "gated", "g1", "Ready with a projected host", time.Minute, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseReady && r.GetStatus().GetFields()["host"] != nil
	})
	if got := statusOf(t, root)["host"]; got != "g1-db.db.internal" {
		t.Errorf("status.host = %v", got)
	}

	d.apply(t, gatedGraph(4))
	d.waitFor(t, "demo.service", "g1-app", "replicas 4 from the changed graph", time.Minute, func(r *convergev1.Resource) bool {
		return r.GetSpec().GetFields()["replicas"].GetNumberValue() == 4 && r.GetPhase() == client.PhaseReady
	})
}

// celWaitExists waits until default/kind/name exists (WaitFor refuses a
// resource that does not exist yet).
func celWaitExists(t *testing.T, d *dev, kind, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := d.api.GetResource(t.Context(), &convergev1.GetResourceRequest{Kind: kind, Name: name})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s was not created within a minute: %v", kind, name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCelGraphChangeHeldForARollout: with recompose: rollout, a changed
// graph leaves its instances' children as they were until a staged
// rollout recomposes them; and a graph change keeps the policy set live
// on the kind it defines.
func TestCelGraphChangeHeldForARollout(t *testing.T) {
	d, _ := celExample(t)
	held := func(replicas int) string {
		return strings.Replace(gatedGraph(replicas), "  kind: gated\n", "  kind: gated\n  recompose: rollout\n", 1)
	}
	d.apply(t, held(1))
	d.waitPhase(t, "std.graph", "gated", client.PhaseReady, time.Minute)
	d.apply(t, "type: resource\nkind: gated\nkind_version: 1\nname: g1\nspec: {port: 5432}\n")
	d.waitPhase(t, "gated", "g1", client.PhaseReady, time.Minute)
	if res := d.conctl(t, "", "kind", "policy", "gated/1", "--set", "max_inflight=7"); res.code != 0 {
		t.Fatalf("%s", res)
	}

	d.apply(t, held(4))
	graph := d.waitFor(t, "std.graph", "gated", "Ready at generation 2", time.Minute, func(r *convergev1.Resource) bool {
		return r.GetGeneration() == 2 && r.GetSyncedGeneration() == 2 && r.GetPhase() == client.PhaseReady
	})
	// stdcel asks for the instances' reconciles before the graph's result
	// is applied, so by now such a request would be among its events.
	events, err := d.api.ListEvents(t.Context(), &convergev1.ListEventsRequest{Namespace: "default", Kind: "gated", Name: "g1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events.GetEvents() {
		if strings.Contains(e.GetMessage(), "reconcile forced") {
			t.Fatalf("the graph change (graph %s) forced a reconcile of the held instance: %v", show(graph), e)
		}
	}
	k, err := d.api.GetKind(t.Context(), &convergev1.GetKindRequest{Kind: "gated", KindVersion: 1})
	if err != nil || k.GetManifest().GetPolicy().GetMaxInflight() != 7 {
		t.Fatalf("after the graph changed the kind's policy is %v (%v), want max_inflight 7 kept", k.GetManifest().GetPolicy(), err)
	}

	if res := d.conctl(t, "", "rollout", "start", "gated", "--to-version", "1", "--recompose", "--waves", "1"); res.code != 0 {
		t.Fatalf("%s", res)
	}
	d.waitFor(t, "demo.service", "g1-app", "replicas 4 from the rollout", time.Minute, func(r *convergev1.Resource) bool {
		return r.GetSpec().GetFields()["replicas"].GetNumberValue() == 4 && r.GetPhase() == client.PhaseReady
	})
}
