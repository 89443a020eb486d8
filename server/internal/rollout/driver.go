package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/notify"
	"github.com/convergehq/converge/server/internal/store"
)

// DefaultReadyTimeout is how long a moved resource has to become Ready
// when the rollout does not say.
const DefaultReadyTimeout = 300 * time.Second

// Config tunes a Driver.
type Config struct {
	// Member is this replica's id: the lease holder's name.
	Member string
	// Interval is how often the driver looks for steps to take (default
	// 250 ms): the time a wave waits at most after it is due, and the
	// resolution of the Ready checks.
	Interval time.Duration
	// Lease is how long a driver keeps a rollout after a step (default
	// 15 s): a replica that stops is replaced within it.
	Lease time.Duration
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = 250 * time.Millisecond
	}
	if c.Lease <= 0 {
		c.Lease = 15 * time.Second
	}
	return c
}

// Driver takes the steps of running rollouts.
type Driver struct {
	cfg   Config
	store *store.Store
	kinds *kinds.Registry
	mover Mover
	bus   *notify.Bus
	log   *slog.Logger
}

// New returns a driver that moves resources with mover.
func New(cfg Config, st *store.Store, reg *kinds.Registry, mover Mover, bus *notify.Bus, log *slog.Logger) *Driver {
	return &Driver{cfg: cfg.withDefaults(), store: st, kinds: reg, mover: mover, bus: bus, log: log}
}

// Name implements service.Service.
func (*Driver) Name() string { return "rollout driver" }

// Run drives rollouts until ctx ends.
func (d *Driver) Run(ctx context.Context) {
	tick := time.NewTicker(d.cfg.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			d.Pass(ctx)
		}
	}
}

// Pass takes the next step of every rollout this driver may drive now.
func (d *Driver) Pass(ctx context.Context) {
	ids, err := d.store.RunnableRollouts(ctx, d.cfg.Member)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("listing rollouts failed", "err", err)
		}
		return
	}
	for _, id := range ids {
		// A wave that ends lets the next one start at once when it has
		// no soak, without waiting for the next pass.
		for advanced := true; advanced && ctx.Err() == nil; {
			var moved bool
			var err error
			moved, advanced, err = d.step(ctx, id)
			if err != nil && ctx.Err() == nil {
				d.log.Warn("a rollout step failed; it is retried", "rollout", id, "err", err)
			}
			if moved && d.bus != nil {
				d.bus.Publish(notify.Tasks)
				d.bus.Publish(notify.Changes)
			}
		}
	}
}

// Step takes rollout id's next step, if it is this driver's to take, in
// one transaction; moved reports whether resources were re-applied.
func (d *Driver) Step(ctx context.Context, id int64) (moved bool, err error) {
	moved, _, err = d.step(ctx, id)
	return moved, err
}

// step is Step, also reporting whether a wave ended, so that the next
// may be due at once.
func (d *Driver) step(ctx context.Context, id int64) (moved, ended bool, err error) {
	err = d.store.Atomic(ctx, func(ctx context.Context) error {
		moved, ended = false, false
		st, ok, err := d.store.TakeRolloutStep(ctx, id, d.cfg.Member, d.cfg.Lease)
		if err != nil || !ok {
			return err
		}
		actor := fmt.Sprintf("%s (rollout %d)", st.Actor, st.ID)
		switch {
		case st.Wave == 0:
			return d.store.CompleteRollout(ctx, st, actor)
		case st.WaveState == "pending" && st.Due && st.Mode == store.RolloutRecompose:
			moved = true
			return d.recomposeWave(ctx, st, actor)
		case st.WaveState == "pending" && st.Due:
			moved = true
			return d.moveWave(ctx, st, actor)
		case st.WaveState == "moving":
			ended, err = d.settle(ctx, st, actor)
			return err
		}
		return nil
	})
	return moved, ended && err == nil, err
}

// moveWave converts and re-applies the wave's members.
func (d *Driver) moveWave(ctx context.Context, st store.RolloutStep, actor string) error {
	members, err := d.store.LockWaveMembers(ctx, st.ID, st.Wave)
	if err != nil {
		return err
	}
	conv, convErr := Converter(d.kinds, st.Kind, st.From, st.To)
	outcomes := make([]store.MemberOutcome, len(members))
	var moves []Move
	var index []int
	for i, m := range members {
		o := &outcomes[i]
		o.ResourceID, o.State = m.ResourceID, "skipped"
		id := fmt.Sprintf("%s/%s/%s", m.Namespace, st.Kind, m.Name)
		if o.Reason = skipReason(m, id, st.From); o.Reason != "" {
			continue
		}
		o.State = "failed"
		if convErr != nil {
			o.Reason = fmt.Sprintf("%s: %v", id, convErr)
			continue
		}
		spec, err := convert(conv, m)
		if err != nil {
			o.Reason = fmt.Sprintf("%s: converting its spec from v%d to v%d: %v", id, st.From, st.To, err)
			continue
		}
		o.OldSpec = m.Spec
		moves = append(moves, Move{Namespace: m.Namespace, Kind: st.Kind, Name: m.Name, ToVersion: st.To, Spec: spec,
			Labels: m.Labels, ProviderConfig: m.ProviderConfig, DeletionPolicy: m.DeletionPolicy})
		index = append(index, i)
	}
	if len(moves) > 0 {
		res, err := d.mover.MoveResources(ctx, store.SourceRollout, actor, moves)
		if err != nil {
			return err
		}
		for j, r := range res {
			o := &outcomes[index[j]]
			if r.Err != nil {
				o.OldSpec, o.Reason = nil, fmt.Sprintf("%s/%s/%s: %v", moves[j].Namespace, st.Kind, moves[j].Name, r.Err)
				continue
			}
			o.State, o.MovedGeneration = "moving", r.Generation
		}
	}
	return d.store.StartWave(ctx, st, outcomes, actor)
}

// settle checks the wave's moved members and ends the wave once none is
// waiting any more.
func (d *Driver) settle(ctx context.Context, st store.RolloutStep, actor string) (ended bool, err error) {
	c, err := d.store.SettleWave(ctx, st)
	if err != nil || c.Moving > 0 || c.Pending > 0 {
		return false, err
	}
	return true, d.store.FinishWave(ctx, st, c, Exceeded(st.Rollout, c), actor)
}

// Exceeded says why a wave's failures stop its rollout, "" when they do
// not. A wave may fail max_failures members, or max_failure_percent of
// its members, whichever is set (both: the first reached); with neither
// set, no failure is allowed.
func Exceeded(r store.Rollout, c store.RolloutCounts) string {
	if c.Failed == 0 {
		return ""
	}
	byCount := r.MaxFailures > 0 || r.MaxFailurePercent == 0
	if byCount && c.Failed > r.MaxFailures {
		return fmt.Sprintf("wave failures passed the threshold: %d of %d failed, more than max_failures %d",
			c.Failed, c.Total, r.MaxFailures)
	}
	if r.MaxFailurePercent > 0 && c.Failed*100 > r.MaxFailurePercent*c.Total {
		return fmt.Sprintf("wave failures passed the threshold: %d of %d failed, more than max_failure_percent %d%%",
			c.Failed, c.Total, r.MaxFailurePercent)
	}
	return ""
}

// skipReason says why a wave leaves a member alone (it is gone, being
// deleted, or no longer at the version the wave takes it from); "" when
// the wave takes it. id names it in the reason.
func skipReason(m store.RolloutMember, id string, version int32) string {
	switch {
	case m.Gone:
		return id + " was deleted before its wave"
	case m.Deleting:
		return id + " is being deleted"
	case m.KindVersion != version:
		return fmt.Sprintf("%s is at v%d, not v%d, by its wave", id, m.KindVersion, version)
	}
	return ""
}
