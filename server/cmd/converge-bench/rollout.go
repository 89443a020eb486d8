package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/devpg"
)

// The rollout workload: -rollout-resources resources of a kind at v1, all
// Ready, moved to v2 by one rollout of 5 waves with no soak, each spec
// converted by v2's conversion and reconciled again by the no-op worker.
// Throughput is resources moved and Ready per second, from the rollout's
// creation to its completion as the database stamped them.

const rolloutKind = "bench.disk"

// rolloutWaves is the number of waves of the measured rollout.
const rolloutWaves = 5

type rolloutResult struct {
	resources int
	elapsed   time.Duration // created_at to finished_at
	waves     []time.Duration
}

func (r rolloutResult) rate() float64 { return float64(r.resources) / r.elapsed.Seconds() }

func rolloutManifest(version int32) *convergev1.KindManifest {
	field := map[int32]string{1: "size", 2: "size_gb"}[version]
	spec, _ := structpb.NewStruct(map[string]any{"type": "object", "additionalProperties": false, "required": []any{field},
		"properties": map[string]any{field: map[string]any{"type": "integer"}}})
	m := &convergev1.KindManifest{Kind: rolloutKind, KindVersion: version, SpecSchema: spec,
		Reactions: []*convergev1.Reaction{{Name: "reconcile", Trigger: "specChange", Emits: []string{"status"}}}}
	if version == 2 {
		m.Conversion = &convergev1.Conversion{Expr: `{"size_gb": spec.size * 1024}`}
	}
	return m
}

func runRollout(ctx context.Context, o options, cluster *devpg.Cluster, run int) (rolloutResult, error) {
	res := rolloutResult{resources: o.rolloutResources}
	st, err := startStack(ctx, o, cluster, fmt.Sprintf("rollout_%d", run), o.workerBin,
		"-kinds", rolloutKind+":1:reconcile,"+rolloutKind+":2:reconcile", "-capacity", strconv.Itoa(o.capacity))
	if err != nil {
		return res, err
	}
	defer st.close()
	c := st.client
	for _, v := range []int32{1, 2} {
		if _, err := c.ApplyKind(ctx, &convergev1.ApplyKindRequest{Manifest: rolloutManifest(v)}); err != nil {
			return res, fmt.Errorf("applying %s v%d: %w", rolloutKind, v, err)
		}
	}
	for from := 0; from < o.rolloutResources; from += o.batch {
		req := &convergev1.ApplyResourcesRequest{}
		for i := from; i < min(o.rolloutResources, from+o.batch); i++ {
			spec, _ := structpb.NewStruct(map[string]any{"size": i + 1})
			req.Resources = append(req.Resources, &convergev1.ApplyResourceRequest{Kind: rolloutKind, KindVersion: 1,
				Name: fmt.Sprintf("disk-%06d", i), Spec: spec})
		}
		if _, err := c.ApplyResources(ctx, req); err != nil {
			return res, fmt.Errorf("applying the disks: %w", err)
		}
	}
	if err := waitKindReady(ctx, st, o.rolloutResources, 10*time.Minute); err != nil {
		return res, err
	}
	start, err := c.StartRollout(ctx, &convergev1.StartRolloutRequest{Kind: rolloutKind, ToVersion: 2, WaveCount: rolloutWaves})
	if err != nil {
		return res, fmt.Errorf("starting the rollout: %w", err)
	}
	id := start.GetRollout().GetId()
	deadline := time.Now().Add(30 * time.Minute)
	for {
		got, err := c.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: id})
		if err != nil {
			return res, err
		}
		r := got.GetRollout()
		if r.GetState() != "running" {
			if r.GetState() != "completed" || int(r.GetCounts().GetReady()) != o.rolloutResources {
				return res, fmt.Errorf("rollout %d ended %s (%s) with %d of %d ready", id, r.GetState(), r.GetReason(),
					r.GetCounts().GetReady(), o.rolloutResources)
			}
			res.elapsed = r.GetFinishedAt().AsTime().Sub(r.GetCreatedAt().AsTime())
			for _, w := range r.GetWaves() {
				res.waves = append(res.waves, w.GetFinishedAt().AsTime().Sub(w.GetStartedAt().AsTime()))
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("rollout %d still running after 30m: %v", id, r.GetCounts())
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitKindReady waits until n resources of the rollout kind are Ready.
func waitKindReady(ctx context.Context, st *stack, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var ready int
		if err := st.pool.QueryRow(ctx, `SELECT count(*) FROM resources r WHERE r.kind = $1 AND converge_phase(r) = 'Ready'`,
			rolloutKind).Scan(&ready); err != nil {
			return err
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d disks Ready after %s", ready, n, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func reportRollout(w io.Writer, o options, settings map[string]string, runs []rolloutResult) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("### Rollout: %d resources from v1 to v2 in %d waves, %s", o.rolloutResources, rolloutWaves, time.Now().UTC().Format("2006-01-02"))
	p("")
	p("- Machine: %s", machine())
	p("- PostgreSQL: %s; %s", profileName(o.durable), settingList(settings))
	p("- Workload: `%s` v1 resources, all Ready; one rollout to v2 with a CEL conversion, %d equal waves, no soak; one no-op Go SDK worker (capacity %d) serving both versions; elapsed is the rollout's created_at to finished_at, stamped by the database",
		rolloutKind, rolloutWaves, o.capacity)
	p("- Runs: %d; each on a fresh database; median (min – max)", len(runs))
	p("")
	p("| Figure | Rollout |")
	p("|---|---|")
	var rates, elapsed, waves []float64
	for _, r := range runs {
		rates = append(rates, r.rate())
		elapsed = append(elapsed, r.elapsed.Seconds())
		for _, wv := range r.waves {
			waves = append(waves, wv.Seconds()*1000)
		}
	}
	p("| resources moved and Ready per second | %s |", spread(rates, "/s", 0))
	p("| rollout, start to completion | %s |", spread(elapsed, "s", 2))
	p("| one wave, its moves to its last Ready | %s |", spread(waves, "ms", 0))
	p("")
	var line []string
	for i, r := range runs {
		line = append(line, fmt.Sprintf("run %d: %.0f/s", i+1, r.rate()))
	}
	p("%s", strings.Join(line, "; "))
	p("")
}
