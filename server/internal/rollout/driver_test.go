package rollout_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/server/internal/api"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/members"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/pgtest"
	"github.com/convergehq/converge/server/internal/rollout"
	"github.com/convergehq/converge/server/internal/rpcvalidate"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/testkit"
	"github.com/convergehq/converge/server/internal/trigger"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// world is a control API over a throwaway database, with what the
// drivers under test need.
type world struct {
	t    *testing.T
	ctl  convergev1connect.ControlServiceClient
	st   *store.Store
	reg  *kinds.Registry
	svc  *api.Service
	log  *slog.Logger
	ctx  context.Context
	kind string
}

func newWorld(t *testing.T, conversion string) *world {
	t.Helper()
	db := pgtest.New(t)
	st := store.New(db.Pool, db.Pool)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := notify.New(db.Pool, "test", 1, log)
	reg := kinds.New(st, bus, log)
	svc := api.New(st, reg, bus, members.New(st, bus, store.Member{ID: "test"}, nil, log), log)
	validator, err := rpcvalidate.New()
	if err != nil {
		t.Fatal(err)
	}
	ctl, _ := testkit.ServeControl(t, svc, connect.WithInterceptors(validator, svc.DryRunner()))
	w := &world{t: t, ctl: ctl, st: st, reg: reg, svc: svc, log: log, ctx: context.Background(), kind: "disk"}
	w.applyKind(1, `{"type":"object","additionalProperties":false,"required":["size"],"properties":{"size":{"type":"integer"}}}`, "")
	w.applyKind(2, `{"type":"object","additionalProperties":false,"required":["size_gb"],"properties":{"size_gb":{"type":"integer"}}}`, conversion)
	return w
}

func (w *world) applyKind(version int32, specSchema, conversion string) {
	w.t.Helper()
	ss := &structpb.Struct{}
	if err := ss.UnmarshalJSON([]byte(specSchema)); err != nil {
		w.t.Fatal(err)
	}
	m := &convergev1.KindManifest{Kind: w.kind, KindVersion: version, SpecSchema: ss,
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}}
	if conversion != "" {
		m.Conversion = &convergev1.Conversion{Expr: conversion}
	}
	if _, err := w.ctl.ApplyKind(w.ctx, &convergev1.ApplyKindRequest{Manifest: m}); err != nil {
		w.t.Fatal(err)
	}
}

// resources applies n disks at v1, disk-00 onwards, with sizes size(i).
func (w *world) resources(n int, size func(i int) int) {
	w.t.Helper()
	req := &convergev1.ApplyResourcesRequest{}
	for i := range n {
		spec, _ := structpb.NewStruct(map[string]any{"size": size(i)})
		req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{Kind: w.kind, KindVersion: 1,
			Name: fmt.Sprintf("disk-%02d", i), Spec: spec, Labels: map[string]string{"wave": fmt.Sprint(i / 2)}})
	}
	if _, err := w.ctl.ApplyResources(w.ctx, req); err != nil {
		w.t.Fatal(err)
	}
	w.reconcileAll()
}

// reconcileAll plays the worker: every queued reconcile of the kind, at
// either version, succeeds.
func (w *world) reconcileAll() {
	w.t.Helper()
	for _, v := range []int32{1, 2} {
		got, err := w.st.Claim(w.ctx, "worker", time.Minute, []store.Want{{Kind: w.kind, Version: v, Trigger: trigger.SpecChange, N: 1000}})
		if err != nil {
			w.t.Fatal(err)
		}
		var out []store.Outcome
		for _, c := range got {
			out = append(out, store.Outcome{Lease: c.Lease, Status: []byte(`{}`)})
		}
		if len(out) > 0 {
			if _, err := w.st.ApplyOutcomes(w.ctx, out, store.Backoff{Base: time.Millisecond, Max: time.Millisecond}); err != nil {
				w.t.Fatal(err)
			}
		}
	}
}

func (w *world) start(req *convergev1.StartRolloutRequest) int64 {
	w.t.Helper()
	req.Kind = w.kind
	if req.ToVersion == 0 {
		req.ToVersion = 2
	}
	res, err := w.ctl.StartRollout(w.ctx, req)
	if err != nil {
		w.t.Fatal(err)
	}
	return res.GetRollout().GetId()
}

func (w *world) rollout(id int64) *convergev1.Rollout {
	w.t.Helper()
	res, err := w.ctl.GetRollout(w.ctx, &convergev1.GetRolloutRequest{RolloutId: id})
	if err != nil {
		w.t.Fatal(err)
	}
	return res.GetRollout()
}

func (w *world) driver(member string, lease time.Duration) *rollout.Driver {
	return rollout.New(rollout.Config{Member: member, Lease: lease}, w.st, w.reg, w.svc, nil, w.log)
}

func (w *world) step(d *rollout.Driver, id int64) bool {
	w.t.Helper()
	moved, err := d.Step(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return moved
}

func (w *world) resource(name string) store.Resource {
	w.t.Helper()
	r, err := w.st.GetResource(w.ctx, "default", w.kind, name)
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

func (w *world) waveStarts(id int64) map[string]int {
	w.t.Helper()
	evs, err := w.st.ListEvents(w.ctx, store.EventFilter{Kind: w.kind, Limit: 1000})
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range evs {
		if e.Reason == "RolloutWaveStarted" {
			out[strings.SplitN(e.Message, " started", 2)[0]]++
		}
	}
	return out
}

// TestRolloutWaves: a rollout moves its waves one after the other, each
// resource once with its converted spec, a second driver holds off while
// the first's lease is live and takes over once it lapses, and two
// drivers racing for a due wave move it once.
func TestRolloutWaves(t *testing.T) {
	w := newWorld(t, `{"size_gb": spec.size * 2}`)
	w.resources(10, func(i int) int { return i + 1 })
	id := w.start(&convergev1.StartRolloutRequest{WaveCount: 5})
	a, b := w.driver("a", time.Hour), w.driver("b", time.Hour)

	if !w.step(a, id) {
		t.Fatal("the first step moved nothing")
	}
	r := w.rollout(id)
	if got := r.GetWaves()[0]; got.GetState() != "moving" || got.GetCounts().GetMoving() != 2 {
		t.Fatalf("wave 1 = %v", got)
	}
	d0 := w.resource("disk-00")
	if d0.KindVersion != 2 || string(d0.Spec) != `{"size_gb": 2}` || d0.Generation != 2 {
		t.Fatalf("disk-00 after its move: v%d gen %d spec %s", d0.KindVersion, d0.Generation, d0.Spec)
	}
	if w.resource("disk-02").KindVersion != 1 {
		t.Fatal("disk-02 of wave 2 moved with wave 1")
	}
	// b waits for a's lease.
	w.reconcileAll()
	if w.step(b, id) || w.rollout(id).GetWaves()[0].GetState() != "moving" {
		t.Fatal("driver b took a step of a rollout a holds")
	}
	w.step(a, id) // wave 1 is Ready: done
	if got := w.rollout(id).GetWaves()[0]; got.GetState() != "done" || got.GetCounts().GetReady() != 2 {
		t.Fatalf("wave 1 after Ready = %v", got)
	}

	// a stops; once its lease lapses, b and c race for wave 2.
	if _, err := w.st.Pool().Exec(w.ctx, `UPDATE rollouts SET lease_until = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	c := w.driver("c", time.Hour)
	var wg sync.WaitGroup
	for _, d := range []*rollout.Driver{b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := d.Step(w.ctx, id); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if starts := w.waveStarts(id); starts[fmt.Sprintf("rollout %d: wave 2 of 5", id)] != 1 {
		t.Fatalf("wave 2 started %v times", starts)
	}
	if d2 := w.resource("disk-02"); d2.Generation != 2 || d2.KindVersion != 2 {
		t.Fatalf("disk-02: v%d gen %d, want v2 gen 2 (moved once)", d2.KindVersion, d2.Generation)
	}

	// Whichever won drives the rest to the end.
	deadline := time.Now().Add(30 * time.Second)
	for w.rollout(id).GetState() == store.RolloutRunning {
		if time.Now().After(deadline) {
			t.Fatalf("the rollout did not complete: %v", w.rollout(id))
		}
		w.reconcileAll()
		w.step(b, id)
		w.step(c, id)
	}
	r = w.rollout(id)
	if r.GetState() != store.RolloutCompleted || r.GetCounts().GetReady() != 10 {
		t.Fatalf("rollout = %v", r)
	}
	h, err := w.st.ResourceHistory(w.ctx, store.ResourceKey{Namespace: "default", Kind: w.kind, Name: "disk-09"}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Revisions[0]; got.Source != store.SourceRollout || got.KindVersion != 2 || !strings.Contains(got.Actor, fmt.Sprintf("(rollout %d)", id)) {
		t.Fatalf("disk-09's newest revision = %+v", got)
	}
}

// TestRolloutStopsAndRollsBack: a wave whose conversions fail past the
// threshold stops the rollout there, naming each resource and the CEL
// position; the later waves stay put; an abort keeps the moved ones, and
// a rollback returns them to v1 with their old specs.
func TestRolloutStopsAndRollsBack(t *testing.T) {
	w := newWorld(t, `{"size_gb": 100 / spec.size}`)
	// disk-02 and disk-03, wave 2, have size 0.
	w.resources(6, func(i int) int {
		if i/2 == 1 {
			return 0
		}
		return i + 1
	})
	id := w.start(&convergev1.StartRolloutRequest{WaveCount: 3, MaxFailures: 1})
	d := w.driver("a", time.Hour)
	for w.rollout(id).GetState() == store.RolloutRunning {
		w.reconcileAll()
		w.step(d, id)
	}
	r := w.rollout(id)
	if r.GetState() != store.RolloutFailed || !strings.Contains(r.GetReason(), "2 of 2 failed, more than max_failures 1") {
		t.Fatalf("rollout = %s: %s", r.GetState(), r.GetReason())
	}
	if got := r.GetWaves(); got[0].GetState() != "done" || got[1].GetState() != "failed" || got[2].GetState() != "pending" {
		t.Fatalf("waves = %v", got)
	}
	if len(r.GetFailures()) != 2 || !strings.Contains(r.GetFailures()[0].GetReason(),
		"default/disk/disk-02: converting its spec from v1 to v2: conversion.expr: 1:17: division by zero") {
		t.Fatalf("failures = %v", r.GetFailures())
	}
	if w.resource("disk-04").KindVersion != 1 || w.resource("disk-02").KindVersion != 1 {
		t.Fatal("a resource of a failed or later wave moved")
	}

	if _, err := w.ctl.AbortRollout(w.ctx, &convergev1.AbortRolloutRequest{RolloutId: id, Reason: "bad conversion"}); err != nil {
		t.Fatal(err)
	}
	if w.step(d, id) {
		t.Fatal("an aborted rollout moved")
	}
	if w.resource("disk-00").KindVersion != 2 {
		t.Fatal("abort moved disk-00 back")
	}
	_, err := w.ctl.PauseRollout(w.ctx, &convergev1.PauseRolloutRequest{RolloutId: id})
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "rollout 1 is aborted; only a rollout that is running can be paused") {
		t.Fatalf("pausing an aborted rollout: %v", err)
	}

	res, err := w.ctl.RollbackRollout(w.ctx, &convergev1.RollbackRolloutRequest{RolloutId: id})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.GetRollout(); got.GetState() != store.RolloutRolledBack || got.GetCounts().GetRolledBack() != 2 {
		t.Fatalf("after rollback: %v", got)
	}
	for name, spec := range map[string]string{"disk-00": `{"size": 1}`, "disk-01": `{"size": 2}`} {
		if r := w.resource(name); r.KindVersion != 1 || string(r.Spec) != spec || r.Generation != 3 {
			t.Fatalf("%s after rollback: v%d gen %d spec %s", name, r.KindVersion, r.Generation, r.Spec)
		}
	}
	// Another rollout of the kind may start now; as a dry run, it stores nothing.
	dry, err := w.ctl.StartRollout(w.ctx, &convergev1.StartRolloutRequest{
		Kind: w.kind, ToVersion: 2, WaveCount: 1, DryRun: true})
	if err != nil || dry.GetRollout().GetCounts().GetTotal() != 6 {
		t.Fatalf("dry-run start: %v, %v", dry, err)
	}
	if list, err := w.ctl.ListRollouts(w.ctx, &convergev1.ListRolloutsRequest{}); err != nil || len(list.GetRollouts()) != 1 {
		t.Fatalf("after a dry-run start: %v, %v", list, err)
	}
}

// TestStartRolloutRefusals: what a rollout cannot start with is refused
// with the field and the rule, and leaves no rollout behind.
func TestStartRolloutRefusals(t *testing.T) {
	w := newWorld(t, `{"size_gb": spec.size}`)
	for _, tc := range []struct {
		req  *convergev1.StartRolloutRequest
		want string
	}{
		{&convergev1.StartRolloutRequest{Kind: "disk", ToVersion: 2}, "kind disk v1 has no top-level resources to move"},
		{&convergev1.StartRolloutRequest{Kind: "disk", ToVersion: 3}, "to_version: kind disk v3 is not registered"},
		{&convergev1.StartRolloutRequest{Kind: "disk", ToVersion: 2, FromVersion: 2}, "from_version: a rollout moves to a newer version"},
		{&convergev1.StartRolloutRequest{Kind: "disk", ToVersion: 2, WaveCount: 2,
			Waves: []*convergev1.RolloutWaveSpec{{Size: &convergev1.RolloutWaveSpec_Count{Count: 1}}}}, "waves and wave_count"},
		{&convergev1.StartRolloutRequest{Kind: "disk", ToVersion: 2,
			Waves: []*convergev1.RolloutWaveSpec{{Size: &convergev1.RolloutWaveSpec_LabelSelector{LabelSelector: "a in ("}}}}, "waves[0].label_selector"},
	} {
		_, err := w.ctl.StartRollout(w.ctx, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("StartRollout(%v) = %v, want %q", tc.req, err, tc.want)
		}
	}
	res, err := w.ctl.ListRollouts(w.ctx, &convergev1.ListRolloutsRequest{})
	if err != nil || len(res.GetRollouts()) != 0 {
		t.Fatalf("rollouts left behind: %v, %v", res.GetRollouts(), err)
	}
}

// TestWaveSizes: waves by count, percentage and label selector take the
// resources in (namespace, name) order, and what none takes is a last
// wave.
func TestWaveSizes(t *testing.T) {
	w := newWorld(t, "")
	w.resources(10, func(i int) int { return i })
	id := w.start(&convergev1.StartRolloutRequest{Waves: []*convergev1.RolloutWaveSpec{
		{Size: &convergev1.RolloutWaveSpec_Count{Count: 3}},
		{Size: &convergev1.RolloutWaveSpec_Percent{Percent: 20}},
		{Size: &convergev1.RolloutWaveSpec_LabelSelector{LabelSelector: "wave=4"}},
	}})
	var got []string
	for _, wv := range w.rollout(id).GetWaves() {
		got = append(got, fmt.Sprintf("%s:%d", wv.GetSelector(), wv.GetCounts().GetTotal()))
	}
	if strings.Join(got, " ") != "3:3 20%:2 wave=4:2 rest:3" {
		t.Fatalf("waves = %v", got)
	}
}

// TestRecomposeRollout: a recompose rollout leaves its resources at their
// version and spec, forces their reconcile a wave at a time, and ends a
// wave once each of its resources reconciled again; it has no spec to
// roll back.
func TestRecomposeRollout(t *testing.T) {
	w := newWorld(t, "")
	w.resources(4, func(i int) int { return i })
	id := w.start(&convergev1.StartRolloutRequest{WaveCount: 2, Recompose: true, ToVersion: 1})
	if r := w.rollout(id); r.GetMode() != store.RolloutRecompose || r.GetFromVersion() != 1 || r.GetToVersion() != 1 {
		t.Fatalf("rollout = %v", r)
	}
	d := w.driver("a", time.Hour)
	before := w.resource("disk-00").Reconciles
	w.step(d, id)
	if got := w.rollout(id).GetWaves(); got[0].GetState() != "moving" || got[1].GetState() != "pending" {
		t.Fatalf("waves = %v", got)
	}
	w.step(d, id) // nothing reconciled yet: wave 1 waits
	if got := w.rollout(id).GetWaves()[0]; got.GetState() != "moving" {
		t.Fatalf("wave 1 before its reconciles = %v", got)
	}
	w.reconcileAll()
	w.step(d, id)
	if r := w.resource("disk-00"); r.Reconciles != before+1 || r.Generation != 1 || r.KindVersion != 1 {
		t.Fatalf("disk-00 after its wave: reconciles %d (before %d), gen %d, v%d", r.Reconciles, before, r.Generation, r.KindVersion)
	}
	if w.resource("disk-02").Reconciles != before {
		t.Fatal("disk-02 of wave 2 reconciled with wave 1")
	}
	for w.rollout(id).GetState() == store.RolloutRunning {
		w.reconcileAll()
		w.step(d, id)
	}
	if r := w.rollout(id); r.GetState() != store.RolloutCompleted || r.GetCounts().GetReady() != 4 {
		t.Fatalf("rollout = %v", r)
	}
	_, err := w.ctl.RollbackRollout(w.ctx, &convergev1.RollbackRolloutRequest{RolloutId: id})
	if err == nil || !strings.Contains(err.Error(), "recomposes; it moved no spec to roll back") {
		t.Fatalf("rollback of a recompose rollout: %v", err)
	}
}

// TestResumeAfterAStop: a rollout its failures stopped goes on when
// resumed, holds while paused, and completes after its last wave.
func TestResumeAfterAStop(t *testing.T) {
	w := newWorld(t, `{"size_gb": 100 / spec.size}`)
	w.resources(6, func(i int) int {
		if i/2 == 1 {
			return 0
		}
		return i + 1
	})
	id := w.start(&convergev1.StartRolloutRequest{WaveCount: 3})
	d := w.driver("a", time.Hour)
	for w.rollout(id).GetState() == store.RolloutRunning {
		w.reconcileAll()
		w.step(d, id)
	}
	if r := w.rollout(id); r.GetState() != store.RolloutFailed || r.GetCurrentWave() != 3 {
		t.Fatalf("rollout = %v", r)
	}
	if _, err := w.ctl.PauseRollout(w.ctx, &convergev1.PauseRolloutRequest{RolloutId: id}); err == nil {
		t.Fatal("a failed rollout was paused")
	}
	if _, err := w.ctl.ResumeRollout(w.ctx, &convergev1.ResumeRolloutRequest{RolloutId: id, Reason: "go on"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ctl.PauseRollout(w.ctx, &convergev1.PauseRolloutRequest{RolloutId: id}); err != nil {
		t.Fatal(err)
	}
	if w.step(d, id) || w.resource("disk-04").KindVersion != 1 {
		t.Fatal("a paused rollout moved wave 3")
	}
	if _, err := w.ctl.ResumeRollout(w.ctx, &convergev1.ResumeRolloutRequest{RolloutId: id}); err != nil {
		t.Fatal(err)
	}
	for w.rollout(id).GetState() == store.RolloutRunning {
		w.reconcileAll()
		w.step(d, id)
	}
	if r := w.rollout(id); r.GetState() != store.RolloutCompleted || r.GetCounts().GetReady() != 4 || w.resource("disk-04").KindVersion != 2 {
		t.Fatalf("after the resume: %s, %d ready", r.GetState(), r.GetCounts().GetReady())
	}
}
