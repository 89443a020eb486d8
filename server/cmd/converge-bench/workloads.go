package main

import (
	"context"
	"fmt"
	"time"

	"github.com/convergehq/converge/server/internal/devpg"
)

// runWorkloads runs o.runs repetitions of every selected workload after
// Tier 0, in the order of workloads, each on a fresh database.
func runWorkloads(ctx context.Context, o options, cluster *devpg.Cluster, riverBin, zoneBin string, r *results) error {
	sel := r.selected
	for i := 1; i <= o.runs && sel["composites"]; i++ {
		logf("run %d/%d: W2 fan-out, W3 chains", i, o.runs)
		cr, err := runComposites(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		logf("run %d/%d: W4 landing zone", i, o.runs)
		if err := runZone(ctx, o, cluster, i, zoneBin, &cr); err != nil {
			return fmt.Errorf("run %d: W4: %w", i, err)
		}
		r.comps = append(r.comps, cr)
		logf("run %d/%d: 1→1,000 Ready in %s, chain of 10 in %s, landing zone in %s", i, o.runs,
			percentile(cr.fanoutReady[1000], 0.5), percentile(cr.chainReady, 0.5), cr.zoneReady)
	}
	for i := 1; i <= o.runs && sel["fanout100k"]; i++ {
		logf("run %d/%d: 1 → %d", i, o.runs, fanoutWideChildren)
		fr, err := runFanoutWide(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: fanout100k: %w", i, err)
		}
		r.wide = append(r.wide, fr)
		logf("run %d/%d: 1 → %d root Ready in %s, rollup %s", i, o.runs, fanoutWideChildren,
			fr.ready.Round(time.Millisecond), fr.rollup.Round(time.Millisecond))
	}
	for i := 1; i <= o.runs && sel["w1"]; i++ {
		logf("run %d/%d: W1 with %d leaves", i, o.runs, o.resources)
		res, err := runW1(ctx, o, cluster, fmt.Sprintf("bench_%d", i))
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		r.w1 = append(r.w1, res)
		line := fmt.Sprintf("%.0f reconciles/s, idle p50 %.1f ms, pg_notify %.1f/s", res.rate, ms(res.idleP50), notifyRate(res))
		if c32 := r.cal.tps(kernelInsert32); c32 > 0 {
			line += fmt.Sprintf(", %.2f× the c=32 single-row INSERT ceiling", res.rate/c32)
		}
		if riverBin != "" {
			logf("run %d/%d: River bench, %d jobs", i, o.runs, o.riverJobs)
			rr, err := runRiver(ctx, riverBin, cluster, fmt.Sprintf("river_%d", i), o.riverJobs, o.keep)
			if err != nil {
				return fmt.Errorf("run %d: River: %w", i, err)
			}
			line += fmt.Sprintf(", %.2f× River (%.0f jobs/s)", res.rate/rr.rate, rr.rate)
			if o.riverDuration > 0 {
				logf("run %d/%d: River bench, continuous for %s", i, o.runs, o.riverDuration)
				if rr.continuous, err = runRiverContinuous(ctx, riverBin, cluster, fmt.Sprintf("river_cont_%d", i), o.riverDuration, o.keep); err != nil {
					return fmt.Errorf("run %d: River continuous: %w", i, err)
				}
				line += fmt.Sprintf(", %.2f× River continuous (%.0f jobs/s)", res.rate/rr.continuous, rr.continuous)
			}
			r.rivers = append(r.rivers, rr)
		}
		logf("run %d/%d: %s", i, o.runs, line)
	}
	for i := 1; i <= o.runs && sel["fairness"]; i++ {
		logf("run %d/%d: fairness, a backlog of %d", i, o.runs, o.resources)
		fr, err := runFairness(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: fairness: %w", i, err)
		}
		r.fairs = append(r.fairs, fr)
		logf("run %d/%d: B under the backlog p50 %.1f ms, p99 %.1f ms; claim round p50 %.2f ms", i, o.runs,
			ms(percentile(probeTotals(fr), 0.5)), ms(percentile(probeTotals(fr), 0.99)), ms(percentile(fr.rounds, 0.5)))
	}
	for i := 1; i <= o.runs && sel["resync"]; i++ {
		logf("run %d/%d: resync cost, %d resources", i, o.runs, o.resources)
		rr, err := runResync(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: resync: %w", i, err)
		}
		r.resyncs = append(r.resyncs, rr)
		logf("run %d/%d: PostgreSQL CPU %.2f%% empty, %.2f%% with %d, %.1f%% resyncing %.0f/s", i, o.runs,
			100*rr.empty.pgCPU, 100*rr.settled.pgCPU, o.resources, 100*rr.resyncing.pgCPU, rr.resyncing.resyncs)
	}
	for i := 1; i <= o.runs && sel["interference"]; i++ {
		logf("run %d/%d: W6, chains under resync of %d resources", i, o.runs, o.resources)
		ir, err := runInterference(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: interference: %w", i, err)
		}
		r.inters = append(r.inters, ir)
		logf("run %d/%d: chain p99 %.0f ms quiet, %.0f ms under %.0f resyncs/s (%+.0f%%); CPU %.1f%% of the machine", i, o.runs,
			ms(percentile(ir.quiet, 0.99)), ms(percentile(ir.busy, 0.99)), ir.resyncs, 100*ir.degradation(), 100*ir.boxCPU)
	}
	for i := 1; i <= o.runs && sel["rest"]; i++ {
		logf("run %d/%d: W5, %d resources at rest", i, o.runs, o.restResources)
		rr, err := runRest(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: rest: %w", i, err)
		}
		r.rests = append(r.rests, rr)
		logf("run %d/%d: converge RSS %.0f MiB (slope %.1f MiB per 100k), %.0f B per resource without payload, idle PostgreSQL CPU %.2f%%",
			i, o.runs, peakRest(rr), rr.slope, perResource(rr, rr.dbBytes-rr.payload), 100*rr.idle.pgCPU)
	}
	for i := 1; i <= o.runs && sel["drain"]; i++ {
		logf("run %d/%d: W7, a backlog of %d drained", i, o.runs, o.resources)
		dr, err := runDrain(ctx, o, cluster, i, 0)
		if err != nil {
			return fmt.Errorf("run %d: drain: %w", i, err)
		}
		r.drains = append(r.drains, dr)
		logf("run %d/%d: %.0f completions/s, last ÷ first decile %.2f", i, o.runs, dr.rate, dr.ratio())
		if o.drainXmin <= 0 {
			continue
		}
		logf("run %d/%d: W7 with an xid held for %s", i, o.runs, o.drainXmin)
		hr, err := runDrain(ctx, o, cluster, i, o.drainXmin)
		if err != nil {
			return fmt.Errorf("run %d: drain with an xid held: %w", i, err)
		}
		r.held = append(r.held, hr)
		recovery := "the drain ended before the release"
		switch {
		case hr.recovered:
			recovery = fmt.Sprintf("recovered %s after the release", hr.recovery.Round(time.Millisecond))
		case hr.released:
			recovery = "no recovery within the drain"
		}
		logf("run %d/%d: xid held: %.0f completions/s, last ÷ first decile %.2f, %s", i, o.runs, hr.rate, hr.ratio(), recovery)
	}
	for i := 1; i <= o.runs && sel["rollout"]; i++ {
		logf("run %d/%d: rollout of %d resources in %d waves", i, o.runs, o.rolloutResources, rolloutWaves)
		rr, err := runRollout(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: rollout: %w", i, err)
		}
		r.rollouts = append(r.rollouts, rr)
		logf("run %d/%d: %d moved and Ready in %s: %.0f resources/s", i, o.runs, rr.resources, rr.elapsed.Round(time.Millisecond), rr.rate())
	}
	for i := 1; i <= o.runs && sel["reads"]; i++ {
		logf("run %d/%d: reads of %d leaves, primary only and with a hot standby", i, o.runs, o.readResources)
		rr, err := runReads(ctx, o, cluster, i)
		if err != nil {
			return fmt.Errorf("run %d: reads: %w", i, err)
		}
		r.reads = append(r.reads, rr)
		logf("run %d/%d: get %.0f/s → %.0f/s with the standby, list %.0f/s → %.0f/s; %.0f%% of the replica server's reads on the standby", i, o.runs,
			rr.primary.getRate, rr.replica.getRate, rr.primary.listRate, rr.replica.listRate, 100*rr.replicaShare)
	}
	if sel["secrets"] {
		return runSecretPairs(ctx, o, cluster, r)
	}
	return nil
}
