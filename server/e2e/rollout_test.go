//go:build unix

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// rolloutKinds are v1 and v2 of a kind whose v2 renames size to size_gb
// with a conversion; conversion is its CEL expression.
func rolloutKinds(kind, conversion string) string {
	return fmt.Sprintf(`type: manifest
kind: %[1]s
kind_version: 1
spec_schema:
  type: object
  additionalProperties: false
  required: [size]
  properties: {size: {type: integer}}
reactions: [{name: reconcile, trigger: specChange, emits: [status]}]
---
type: manifest
kind: %[1]s
kind_version: 2
spec_schema:
  type: object
  additionalProperties: false
  required: [size_gb]
  properties: {size_gb: {type: integer}}
reactions: [{name: reconcile, trigger: specChange, emits: [status]}]
conversion:
  expr: '%[2]s'
`, kind, conversion)
}

// applyRolloutResources applies n resources of kind at v1, named
// KIND-0000 onwards, with sizes size(i), a thousand a call.
func applyRolloutResources(t *testing.T, api *client.Client, kind string, n int, size func(int) int) {
	t.Helper()
	for from := 0; from < n; from += 1000 {
		req := &convergev1.ApplyResourcesRequest{}
		for i := from; i < min(n, from+1000); i++ {
			spec, _ := structpb.NewStruct(map[string]any{"size": size(i)})
			req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{
				Kind: kind, KindVersion: 1, Name: fmt.Sprintf("%s-%04d", kind, i), Spec: spec})
		}
		if _, err := api.ApplyResources(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
}

var startedRollout = regexp.MustCompile(`^rollout (\d+) started`)

// startRollout runs conctl rollout start and returns the rollout's id.
func startRollout(t *testing.T, srv *server, args ...string) int64 {
	t.Helper()
	r := conctl(t, srv, "", append([]string{"rollout", "start"}, args...)...)
	m := startedRollout.FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatal(r)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// waitRollout polls the rollout until done says so.
func waitRollout(t *testing.T, api *client.Client, id int64, within time.Duration, done func(*convergev1.Rollout) bool) *convergev1.Rollout {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		res, err := api.GetRollout(context.Background(), &convergev1.GetRolloutRequest{RolloutId: id})
		if err == nil && done(res.GetRollout()) {
			return res.GetRollout()
		}
		if time.Now().After(deadline) {
			t.Fatalf("rollout %d not there after %s: %v (%v)", id, within, res.GetRollout(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// atVersion counts the resources of kind at version.
func atVersion(t *testing.T, api *client.Client, kind string, version int32) int {
	t.Helper()
	res, err := api.CountResources(context.Background(), &convergev1.CountResourcesRequest{Kind: kind, KindVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	return int(res.GetTotal())
}

// kindEvents counts the events of kind v2, where a rollout to v2 records its steps, by reason.
func kindEvents(t *testing.T, api *client.Client, kind string) map[string]int {
	t.Helper()
	res, err := api.ListEvents(context.Background(), &convergev1.ListEventsRequest{Kind: kind, Name: "v2", PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range res.GetEvents() {
		out[e.GetReason()]++
	}
	return out
}

// TestRolloutOfAThousand moves 1,000 resources from v1 to v2 in 5 waves
// with a conversion, across a server restart between waves; every
// resource ends at v2 with its converted spec and Ready, each step is an
// event, and a rollback returns them all to v1 with their old specs.
func TestRolloutOfAThousand(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	if r := conctl(t, srv, rolloutKinds("disk", `{"size_gb": spec.size * 1024}`), "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r)
	}
	startNoop(t, srv, "noop", "-kinds", "disk:1:reconcile,disk:2:reconcile")
	applyRolloutResources(t, srv.api, "disk", 1000, func(i int) int { return i + 1 })
	waitCount(t, srv.api, "disk", client.PhaseReady, 1000)

	id := startRollout(t, srv, "disk", "--to-version", "2", "--waves", "5", "--soak", "1s", "--reason", "bigger disks")
	// The server dies after the first wave; another process takes over.
	waitRollout(t, srv.api, id, time.Minute, func(r *convergev1.Rollout) bool { return r.GetWaves()[0].GetState() == "done" })
	srv.kill()
	srv.start()
	r := waitRollout(t, srv.api, id, 3*time.Minute, func(r *convergev1.Rollout) bool { return r.GetState() != "running" })
	if r.GetState() != "completed" || r.GetCounts().GetReady() != 1000 || len(r.GetWaves()) != 5 {
		t.Fatalf("rollout after its run: %v", r)
	}
	if n := atVersion(t, srv.api, "disk", 2); n != 1000 {
		t.Fatalf("%d resources at v2, want 1000", n)
	}
	d := getResource(t, srv.api, "disk", "disk-0999")
	if d.GetKindVersion() != 2 || d.GetSpec().GetFields()["size_gb"].GetNumberValue() != 1000*1024 || d.GetGeneration() != 2 {
		t.Fatalf("disk-0999 after the rollout: %v", d)
	}
	ev := kindEvents(t, srv.api, "disk")
	if ev["RolloutStarted"] != 1 || ev["RolloutWaveStarted"] != 5 || ev["RolloutWaveDone"] != 5 || ev["RolloutCompleted"] != 1 {
		t.Fatalf("rollout events: %v", ev)
	}
	status := conctl(t, srv, "", "rollout", "status", "disk")
	if status.code != 0 || !strings.Contains(status.stdout, fmt.Sprintf("rollout %d: disk v1 -> v2, completed, 1000 of 1000 ready, 0 failed", id)) {
		t.Fatal(status)
	}

	back := conctl(t, srv, "", "rollout", "rollback", fmt.Sprint(id), "--reason", "undo")
	if back.code != 0 || !strings.Contains(back.stdout, "rolled_back") {
		t.Fatal(back)
	}
	if n := atVersion(t, srv.api, "disk", 1); n != 1000 {
		t.Fatalf("%d resources back at v1, want 1000", n)
	}
	d = getResource(t, srv.api, "disk", "disk-0999")
	if d.GetSpec().GetFields()["size"].GetNumberValue() != 1000 || d.GetGeneration() != 3 {
		t.Fatalf("disk-0999 after the rollback: %v", d)
	}
	waitCount(t, srv.api, "disk", client.PhaseReady, 1000)
}

// TestRolloutStopsOnAFailingWave: a conversion that fails for the
// resources of wave 2 stops the rollout there, naming each resource and
// the CEL position; the later waves stay at v1; an abort ends it with the
// moved ones left at v2, and a rollback returns those to v1.
func TestRolloutStopsOnAFailingWave(t *testing.T) {
	begin(t)
	srv := startServer(t, pgtest.New(t).URL, fast)
	if r := conctl(t, srv, rolloutKinds("vol", `{"size_gb": 100 / spec.size}`), "apply", "-f", "-"); r.code != 0 {
		t.Fatal(r)
	}
	startNoop(t, srv, "noop", "-kinds", "vol:1:reconcile,vol:2:reconcile")
	// Wave 2 of 5 is vol-0020 to vol-0039: size 0.
	applyRolloutResources(t, srv.api, "vol", 100, func(i int) int {
		if i >= 20 && i < 40 {
			return 0
		}
		return i + 1
	})
	waitCount(t, srv.api, "vol", client.PhaseReady, 100)

	id := startRollout(t, srv, "vol", "--to-version", "2", "--waves", "5", "--max-failures", "10%")
	if r := conctl(t, srv, "", "rollout", "pause", fmt.Sprint(id)); r.code != 0 || !strings.Contains(r.stdout, "paused") {
		t.Fatal(r)
	}
	if r := conctl(t, srv, "", "rollout", "resume", fmt.Sprint(id)); r.code != 0 || !strings.Contains(r.stdout, "running") {
		t.Fatal(r)
	}
	r := waitRollout(t, srv.api, id, 2*time.Minute, func(r *convergev1.Rollout) bool { return r.GetState() != "running" })
	if r.GetState() != "failed" || !strings.Contains(r.GetReason(), "20 of 20 failed, more than max_failure_percent 10%") {
		t.Fatalf("rollout: %s: %s", r.GetState(), r.GetReason())
	}
	waves := r.GetWaves()
	if waves[0].GetState() != "done" || waves[1].GetState() != "failed" || waves[2].GetState() != "pending" || r.GetCurrentWave() != 3 {
		t.Fatalf("waves: %v", waves)
	}
	if len(r.GetFailures()) != 20 || r.GetFailures()[0].GetReason() !=
		"default/vol/vol-0020: converting its spec from v1 to v2: conversion.expr: 1:17: division by zero" {
		t.Fatalf("failures: %v", r.GetFailures())
	}
	if n := atVersion(t, srv.api, "vol", 2); n != 20 {
		t.Fatalf("%d resources at v2, want wave 1's 20", n)
	}
	status := conctl(t, srv, "", "rollout", "status", fmt.Sprint(id))
	if !strings.Contains(status.stdout, "wave 2 failed: default/vol/vol-0039: converting its spec") {
		t.Fatal(status)
	}

	if r := conctl(t, srv, "", "rollout", "abort", fmt.Sprint(id), "--reason", "the conversion divides by size"); r.code != 0 ||
		!strings.Contains(r.stdout, "aborted") {
		t.Fatal(r)
	}
	if r := conctl(t, srv, "", "rollout", "resume", fmt.Sprint(id)); r.code != 1 ||
		!strings.Contains(r.stderr, fmt.Sprintf("rollout %d is aborted; only a rollout that is paused or failed can be resumed", id)) {
		t.Fatal(r)
	}
	if n := atVersion(t, srv.api, "vol", 2); n != 20 {
		t.Fatalf("%d resources at v2 after the abort, want 20", n)
	}
	if r := conctl(t, srv, "", "rollout", "rollback", fmt.Sprint(id)); r.code != 0 {
		t.Fatal(r)
	}
	if n := atVersion(t, srv.api, "vol", 1); n != 100 {
		t.Fatalf("%d resources at v1 after the rollback, want 100", n)
	}
	if v := getResource(t, srv.api, "vol", "vol-0005"); v.GetSpec().GetFields()["size"].GetNumberValue() != 6 {
		t.Fatalf("vol-0005 after the rollback: %v", v)
	}
	ev := kindEvents(t, srv.api, "vol")
	for _, reason := range []string{"RolloutStarted", "RolloutPaused", "RolloutResumed", "RolloutStopped", "RolloutAborted", "RolloutRolledBack"} {
		if ev[reason] != 1 {
			t.Errorf("%s events: %d, want 1 (%v)", reason, ev[reason], ev)
		}
	}
}

// waitCount polls until n resources of kind are in phase.
func waitCount(t *testing.T, api *client.Client, kind, phase string, n int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		res, err := api.CountResources(context.Background(), &convergev1.CountResourcesRequest{Kind: kind})
		if err == nil && res.GetPhases()[phase] == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v in phases %v after 2m, want %d %s (%v)", kind, res.GetTotal(), res.GetPhases(), n, phase, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
