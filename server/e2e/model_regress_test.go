//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/pgtest"
)

// Fixed regression cases beside the random model: each is a sequence the
// model found (or the issue named), made deterministic, asserting the
// behaviour the rules require.

const regressTimeout = 20 * time.Second

// TestModelRegressionCapWithResync is README step 7: a greeting-like leaf
// served by a worker of the SDK's default capacity (16), tuned live to
// max_inflight=10 and resync_interval_seconds=300; new resources must
// still become Ready: the kind's slots go to the work that is queued, so
// "resync", asking for 16 with nothing to run, must not take the 10 that
// "specChange" needs.
func TestModelRegressionCapWithResync(t *testing.T) {
	begin(t)
	s := startServer(t, pgtest.New(t).URL, fast)
	applyKind(t, s.api, leafKind(t, "greeting"))
	startLeaf(t, s, "leaf")
	applyGreeting(t, s.api, "bob")
	waitResource(t, s.api, "greeting", "bob", "Ready", regressTimeout, client.IsReady)
	mustCall(t, "kind policy greeting/1", s.api.UpdateKindPolicy, &convergev1.UpdateKindPolicyRequest{
		Kind: "greeting", KindVersion: 1, Policy: &convergev1.KindPolicy{MaxInflight: 10, ResyncIntervalSeconds: 300},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"max_inflight", "resync_interval_seconds"}}})
	for _, n := range []string{"carol", "dave", "erin"} {
		applyGreeting(t, s.api, n)
	}
	for _, n := range []string{"carol", "dave", "erin"} {
		waitResource(t, s.api, "greeting", n, "Ready (a capped kind's resync trigger must not take the free slots it does not use)", regressTimeout, client.IsReady)
	}
}

func applyGreeting(t *testing.T, c *client.Client, name string) {
	t.Helper()
	mustCall(t, "apply greeting/"+name, c.ApplyResource, &convergev1.ApplyResourceRequest{
		Kind: "greeting", KindVersion: 1, Name: name, Spec: mustStruct(t, map[string]any{"name": name})})
}

// startRegressWorld starts a server and the model's fleet with a leaf
// kind "part" (finalizer as asked) and a composite kind "stack" of parts.
func startRegressWorld(t *testing.T, tm timings, finalizer bool) (*server, *fleet, kindDef, kindDef) {
	t.Helper()
	s := startServer(t, pgtest.New(t).URL, tm)
	f := newFleet(s.url, newRecorder(0))
	t.Cleanup(func() { f.stopAll(t) })
	part := kindDef{name: "part", versions: []int{1}, finalizer: finalizer}
	stack := kindDef{name: "stack", composite: true, versions: []int{1}}
	for _, d := range []kindDef{part, stack} {
		applyKind(t, s.api, modelManifest(d, 1, &convergev1.KindPolicy{}, false))
	}
	return s, f, part, stack
}

// TestModelRegressionFixedCompositeNotFailed: a composite Failed through
// a child (the child's handler fails terminally for a poisoned spec); the
// composite's spec is fixed. Waiting as `apply --wait` does (judging only
// reads whose synced_generation reached the applied generation) must not
// see Failed: the fix is in, and it must settle Ready. Nor may the
// composite read Failed while its generation is ahead of its synced one:
// its children's old failure is not about the generation it now has.
func TestModelRegressionFixedCompositeNotFailed(t *testing.T) {
	begin(t)
	s, f, part, stack := startRegressWorld(t, fast, false)
	f.start(part, 4)
	f.start(stack, 4)
	applyStack := func(poison bool) int64 {
		spec := compSpec{N: 2, ChildKind: "part", Poison: poison}
		return mustCall(t, "apply stack/s", s.api.ApplyResource, &convergev1.ApplyResourceRequest{
			Kind: "stack", KindVersion: 1, Name: "s", Spec: mustStructOf(spec)}).GetResource().GetGeneration()
	}
	g1 := applyStack(true)
	waitResource(t, s.api, "stack", "s", "Failed through its child", regressTimeout, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseFailed && r.GetSyncedGeneration() >= g1
	})
	g2 := applyStack(false)
	var seen []string
	deadline := time.Now().Add(regressTimeout)
	for {
		r, err := tryGetResource(s.api, "stack", "s")
		if err != nil {
			t.Fatal(err)
		}
		if r.GetPhase() == client.PhaseFailed {
			if r.GetSyncedGeneration() >= g2 {
				seen = append(seen, "apply --wait would report Failed after the fix: "+explainFull(r))
			} else if class := phaseHonesty(r); class != "" {
				seen = append(seen, class+": "+explainFull(r))
			}
		}
		if r.GetPhase() == client.PhaseReady && r.GetSyncedGeneration() >= g2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stack/s did not settle Ready after the fix: %s", explainFull(r))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(seen) > 0 {
		t.Errorf("after the fix (generation %d) the composite was read Failed %d time(s), e.g.:\n  %s",
			g2, len(seen), strings.Join(seen[:min(len(seen), 3)], "\n  "))
	}
}

// TestModelRegressionRejectedStatusReachesTeardown: a handler reports a
// status its status_schema refuses; the task fails terminally. The
// status is not served as the resource's status, but it is kept as its
// rejected status and handed to its teardown, so nothing the handler said
// it created is lost.
func TestModelRegressionRejectedStatusReachesTeardown(t *testing.T) {
	begin(t)
	s, f, part, _ := startRegressWorld(t, fast, true)
	f.start(part, 2)
	mustCall(t, "apply part/p", s.api.ApplyResource, &convergev1.ApplyResourceRequest{
		Kind: "part", KindVersion: 1, Name: "p", Spec: mustStructOf(leafSpec{BadStatus: true})})
	r := waitResource(t, s.api, "part", "p", "Failed terminally", regressTimeout, func(r *convergev1.Resource) bool {
		return r.GetPhase() == client.PhaseFailed
	})
	if msg := r.GetFailure().GetMessage(); !strings.Contains(msg, "value") {
		t.Errorf("the failure should name the offending path /value: %q", msg)
	}
	if len(r.GetStatus().AsMap()) != 0 || fmt.Sprint(r.GetRejectedStatus().AsMap()["value"]) != "42" {
		t.Errorf("after the refusal: status %v, rejected status %v; want no status and the refused one kept",
			r.GetStatus().AsMap(), r.GetRejectedStatus().AsMap())
	}
	deleteResource(t, s.api, "part", "p")
	waitGone(t, s.api, "part", "p", regressTimeout)
	f.mu.Lock()
	status, rejected := f.teardownStatus["part/p"], f.teardownRejected["part/p"]
	f.mu.Unlock()
	var st map[string]any
	_ = json.Unmarshal(rejected, &st)
	if fmt.Sprint(st["value"]) != "42" {
		t.Errorf("the teardown got status %s and rejected status %s; want the refused status ({\"value\": 42, ...}) as its rejected status", status, rejected)
	}
}

// TestModelRegressionCrashedServerClaimsRunAgain: the single server is
// killed with SIGKILL while a task it claimed runs on a worker that dies
// with it; after a restart on the same database the task must run again
// within the membership window (~10 s), not only when its lease (the
// default 30 s) runs out.
func TestModelRegressionCrashedServerClaimsRunAgain(t *testing.T) {
	begin(t)
	defaults := timings{lease: 30 * time.Second, heartbeat: 5 * time.Second, poll: time.Second,
		retryBase: 100 * time.Millisecond, retryMax: time.Second}
	s, f, part, _ := startRegressWorld(t, defaults, false)
	f.setBehaviour("part", behaviour{mode: behSlow, slow: 5 * time.Minute})
	f.start(part, 2)
	mustCall(t, "apply part/p", s.api.ApplyResource, &convergev1.ApplyResourceRequest{
		Kind: "part", KindVersion: 1, Name: "p", Spec: mustStructOf(leafSpec{})})
	deadline := time.Now().Add(regressTimeout)
	for len(f.rec.invocations()) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the task of part/p never reached the worker")
		}
		time.Sleep(pollInterval)
	}
	s.kill()
	f.stop(t, "part", false) // the worker dies too: nobody holds the task
	f.setBehaviour("part", behaviour{mode: behOK})
	restarted := time.Now()
	s.start()
	f.start(part, 2)
	const window = 15 * time.Second // the membership window (10 s) and a claim round
	r := waitResource(t, s.api, "part", "p", "Ready", 2*defaults.lease, client.IsReady)
	took := time.Since(restarted)
	t.Logf("part/p was Ready %s after the restart (lease %s): %s", took.Round(100*time.Millisecond), defaults.lease, explainFull(r))
	if took > window {
		t.Errorf("the task claimed by the crashed server ran again only after %s, past the %s the membership window allows: it waited for its lease", took.Round(100*time.Millisecond), window)
	}
}

// TestModelRegressionCapWithFinalizer is what TestModel found first (seeds
// 9870455318702547799, 8488958197237606807): README step 7's combination
// without any resync. A capped kind with a teardown, served by a worker
// with more slots than the cap: its "deleteRequested" want, with nothing
// queued, must leave the slots to "specChange".
func TestModelRegressionCapWithFinalizer(t *testing.T) {
	begin(t)
	s, f, _, _ := startRegressWorld(t, fast, false)
	part := kindDef{name: "capped", versions: []int{1}, finalizer: true}
	applyKind(t, s.api, modelManifest(part, 1, &convergev1.KindPolicy{MaxInflight: 2}, false))
	f.start(part, 4)
	names := []string{"a", "b", "c"}
	for _, n := range names {
		mustCall(t, "apply capped/"+n, s.api.ApplyResource, &convergev1.ApplyResourceRequest{
			Kind: "capped", KindVersion: 1, Name: n, Spec: mustStructOf(leafSpec{})})
	}
	for _, n := range names {
		waitResource(t, s.api, "capped", n, "Ready (a capped kind's deleteRequested trigger must not take the free slots it does not use)", regressTimeout, client.IsReady)
	}
}

// TestModelRegressionReclaimedChildComesBack is what TestModel found in CI
// (seed 7534878104997317649): a composite drops its children while no
// worker can tear them down, then emits them again. They stay Deleting
// (their teardown is owed), and once a worker runs it the composite
// re-creates them and settles Ready on its latest generation.
func TestModelRegressionReclaimedChildComesBack(t *testing.T) {
	begin(t)
	s, f, part, stack := startRegressWorld(t, fast, true)
	f.start(stack, 2)
	applyStack := func(n int) int64 {
		return mustCall(t, "apply stack/s", s.api.ApplyResource, &convergev1.ApplyResourceRequest{
			Kind: "stack", KindVersion: 1, Name: "s", Spec: mustStructOf(compSpec{N: n, ChildKind: "part"})}).GetResource().GetGeneration()
	}
	synced := func(gen int64) func(*convergev1.Resource) bool {
		return func(r *convergev1.Resource) bool { return r.GetSyncedGeneration() >= gen }
	}
	waitResource(t, s.api, "stack", "s", "composed with 2 children", regressTimeout, synced(applyStack(2)))
	waitResource(t, s.api, "stack", "s", "composed with no children", regressTimeout, synced(applyStack(0)))
	for _, n := range []string{childName("s", 0), childName("s", 1)} {
		waitResource(t, s.api, "part", n, "Deleting (its teardown has no worker)", regressTimeout, func(r *convergev1.Resource) bool {
			return r.GetPhase() == client.PhaseDeleting
		})
	}
	g3 := applyStack(2)
	waitResource(t, s.api, "stack", "s", "composed with 2 children again", regressTimeout, synced(g3))
	f.start(part, 2)
	r := waitResource(t, s.api, "stack", "s", "Ready with its children re-created", regressTimeout, func(r *convergev1.Resource) bool {
		return client.IsReady(r) && r.GetSyncedGeneration() >= g3 && r.GetRollup().GetReady() == 2
	})
	t.Logf("stack/s: %s", explainFull(r))
}
