package conctl

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func (a *app) rolloutCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout start|status|list|pause|resume|abort|rollback",
		Short: "Move the resources of a kind to a newer version in waves",
		Long: `Rollout moves the resources of a kind version to a newer version in waves,
converting each spec with the newer version's conversion. Between waves it
waits for the moved resources to become Ready and for --soak; a wave whose
failures pass --max-failures stops the rollout. A rollout lives on the
server: it survives restarts and is driven by one replica at a time.`,
		Example: `  conctl rollout start disk --to-version 2 --waves 5 --soak 30s --max-failures 10%
  conctl rollout status disk --watch
  conctl rollout rollback 3 --reason "v2 breaks the backups"`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s needs a subcommand: start, status, list, pause, resume, abort or rollback", cmd.CommandPath())
			}
			return usagef("%s: unknown subcommand %q (they are start, status, list, pause, resume, abort and rollback)", cmd.CommandPath(), args[0])
		},
	}
	cmd.AddCommand(a.rolloutStartCmd(), a.rolloutStatusCmd(), a.rolloutListCmd())
	for _, verb := range []string{"pause", "resume", "abort", "rollback"} {
		cmd.AddCommand(a.rolloutActionCmd(verb))
	}
	return cmd
}

type rolloutStartFlags struct {
	to, from      int32
	waveCount     int32
	waves         []string
	soak          time.Duration
	maxFailures   string
	readyTimeout  time.Duration
	reason        string
	allNamespaces bool
	recompose     bool
}

func (a *app) rolloutStartCmd() *cobra.Command {
	var fl rolloutStartFlags
	cmd := &cobra.Command{
		Use:   "start KIND --to-version N [--waves N | --wave SIZE ...]",
		Short: "Start a rollout of a kind's resources to a newer version",
		Long: `Start moves the top-level resources of KIND at --from-version (default: the
version the target's conversion converts from, else the one before it) in
--namespace (or every namespace with -A) to --to-version.

Waves are --waves N equal waves, or one --wave per wave, in order: a count
(10), a percentage of all the resources (25%) or a label selector
(app=web); resources no wave takes form a last wave. --max-failures is a
count (2) or a percentage of a wave (10%); a wave with more failures
stops the rollout (default 0: any failure stops it). A moved resource
fails when its spec does not convert or is not valid at the new version,
or when it is not Ready within --ready-timeout.

With --recompose the resources stay at --to-version: each wave forces their
reconcile, as conctl reconcile does (a composite's composer runs again, with
the composer or graph it has now), and a resource is done when it is Ready
after that reconcile. Use it after deploying a new composer, so its
instances change a wave at a time.`,
		Example: `  conctl rollout start disk --to-version 2 --waves 5
  conctl rollout start disk --to-version 2 --wave 1 --wave 10% --wave tier=prod --soak 10m --max-failures 2
  conctl rollout start webapp --to-version 1 --recompose --waves 4 --soak 5m`,
		Args: exactArgs(1, "KIND"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := fl.request(args[0], a.namespace)
			if err != nil {
				return err
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			res, err := a.client.StartRollout(ctx, req)
			if err != nil {
				return wrapf(err, "start rollout of %s", args[0])
			}
			return a.printRollout(res.GetRollout(), "started")
		},
	}
	f := cmd.Flags()
	f.Int32Var(&fl.to, "to-version", 0, "the version to move to (required)")
	f.Int32Var(&fl.from, "from-version", 0, "the version to move from")
	f.Int32Var(&fl.waveCount, "waves", 0, "split the resources into this many equal waves")
	f.StringArrayVar(&fl.waves, "wave", nil, "one wave: a count, a percentage (25%) or a label selector; repeatable, in order")
	f.DurationVar(&fl.soak, "soak", 0, "time between a wave's end and the next wave's start")
	f.StringVar(&fl.maxFailures, "max-failures", "", "failures a wave may have: a count (2) or a percentage (10%)")
	f.DurationVar(&fl.readyTimeout, "ready-timeout", 0, "how long a moved resource has to become Ready (default 5m)")
	f.StringVar(&fl.reason, "reason", "", "why, for the rollout's events")
	f.BoolVarP(&fl.allNamespaces, "all-namespaces", "A", false, "move the kind's resources in every namespace")
	f.BoolVar(&fl.recompose, "recompose", false, "reconcile (for a composite: compose) the resources of --to-version again, in waves, instead of moving them")
	a.dryRunFlag(cmd, false)
	return cmd
}

func (fl rolloutStartFlags) request(kind, namespace string) (*convergev1.StartRolloutRequest, error) {
	if fl.to == 0 {
		return nil, usagef("--to-version is required: the version to move %s to", kind)
	}
	if fl.waveCount > 0 && len(fl.waves) > 0 {
		return nil, usagef("--waves and --wave: give equal waves or each wave, not both")
	}
	req := &convergev1.StartRolloutRequest{Kind: kind, ToVersion: fl.to, FromVersion: fl.from, WaveCount: fl.waveCount,
		SoakSeconds: seconds(fl.soak), ReadyTimeoutSeconds: seconds(fl.readyTimeout), Reason: fl.reason, Namespace: namespace,
		Recompose: fl.recompose}
	if fl.allNamespaces {
		req.Namespace = ""
	}
	for _, w := range fl.waves {
		spec, err := waveSpec(w)
		if err != nil {
			return nil, err
		}
		req.Waves = append(req.Waves, spec)
	}
	if m := fl.maxFailures; m != "" {
		pct, isPct := strings.CutSuffix(m, "%")
		n, err := strconv.ParseInt(pct, 10, 32)
		if err != nil || n < 0 {
			return nil, usagef("--max-failures %q: want a count (2) or a percentage (10%%)", m)
		}
		if isPct {
			req.MaxFailurePercent = int32(n)
		} else {
			req.MaxFailures = int32(n)
		}
	}
	return req, nil
}

// waveSpec reads one --wave: a count, a percentage or a label selector.
func waveSpec(w string) (*convergev1.RolloutWaveSpec, error) {
	if pct, ok := strings.CutSuffix(w, "%"); ok {
		n, err := strconv.ParseInt(pct, 10, 32)
		if err != nil || n < 1 || n > 100 {
			return nil, usagef("--wave %q: a percentage is 1%% to 100%%", w)
		}
		return &convergev1.RolloutWaveSpec{Size: &convergev1.RolloutWaveSpec_Percent{Percent: int32(n)}}, nil
	}
	if n, err := strconv.ParseInt(w, 10, 32); err == nil {
		if n < 1 {
			return nil, usagef("--wave %q: a count is at least 1", w)
		}
		return &convergev1.RolloutWaveSpec{Size: &convergev1.RolloutWaveSpec_Count{Count: int32(n)}}, nil
	}
	return &convergev1.RolloutWaveSpec{Size: &convergev1.RolloutWaveSpec_LabelSelector{LabelSelector: w}}, nil
}

func seconds(d time.Duration) int32 {
	return int32((d + time.Second - 1) / time.Second)
}

func (a *app) rolloutStatusCmd() *cobra.Command {
	var watch bool
	cmd := &cobra.Command{
		Use:   "status ID|KIND [--watch]",
		Short: "Show a rollout's waves and failures",
		Long: `Status shows a rollout (by its id, or the newest rollout of KIND): its state,
each wave with its members' counts, and the failed members with why. With
--watch it shows it again whenever it changes, until it is no longer
running.`,
		Example: `  conctl rollout status 3
  conctl rollout status disk --watch`,
		Args: exactArgs(1, "ID or KIND"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var last string
			for {
				r, err := a.findRollout(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if now := rolloutSummary(r); now != last {
					if err := a.printRollout(r, ""); err != nil {
						return err
					}
					last = now
				}
				if !watch || r.GetState() != "running" {
					return nil
				}
				select {
				case <-cmd.Context().Done():
					return nil
				case <-time.After(time.Second):
				}
			}
		},
	}
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "show the rollout again as it changes, until it is not running")
	return cmd
}

func (a *app) findRollout(ctx context.Context, arg string) (*convergev1.Rollout, error) {
	ctx, cancel := a.call(ctx)
	defer cancel()
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil {
		res, err := a.client.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: id})
		if err != nil {
			return nil, wrapf(err, "get rollout %d", id)
		}
		return res.GetRollout(), nil
	}
	list, err := a.client.ListRollouts(ctx, &convergev1.ListRolloutsRequest{Kind: arg, PageSize: 1})
	if err != nil {
		return nil, wrapf(err, "list rollouts of %s", arg)
	}
	if len(list.GetRollouts()) == 0 {
		return nil, fmt.Errorf("kind %s has no rollouts", arg)
	}
	res, err := a.client.GetRollout(ctx, &convergev1.GetRolloutRequest{RolloutId: list.GetRollouts()[0].GetId()})
	if err != nil {
		return nil, wrapf(err, "get rollout %d", list.GetRollouts()[0].GetId())
	}
	return res.GetRollout(), nil
}

func (a *app) rolloutListCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "list [KIND]",
		Short:   "List rollouts, newest first",
		Example: "  conctl rollout list\n  conctl rollout list disk -o json",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s takes at most one KIND", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &convergev1.ListRolloutsRequest{}
			if len(args) == 1 {
				req.Kind = args[0]
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			res, err := a.client.ListRollouts(ctx, req)
			if err != nil {
				return wrapf(err, "list rollouts")
			}
			if a.machine() {
				msgs := make([]proto.Message, len(res.GetRollouts()))
				for i, r := range res.GetRollouts() {
					msgs[i] = r
				}
				return a.printMessages(msgs, false)
			}
			t := newTable(a.stdout, "ID", "KIND", "FROM", "TO", "STATE", "WAVE", "READY", "FAILED", "TOTAL", "AGE", "REASON")
			for _, r := range res.GetRollouts() {
				c := r.GetCounts()
				t.row(fmt.Sprint(r.GetId()), r.GetKind(), fmt.Sprintf("v%d", r.GetFromVersion()), fmt.Sprintf("v%d", r.GetToVersion()),
					r.GetState(), waveText(r), fmt.Sprint(c.GetReady()), fmt.Sprint(c.GetFailed()), fmt.Sprint(c.GetTotal()),
					age(a.now(), r.GetCreatedAt()), truncate(r.GetReason(), 60))
			}
			return t.flush()
		},
	}
}

func (a *app) rolloutActionCmd(verb string) *cobra.Command {
	var reason string
	short := map[string]string{
		"pause":    "Hold a running rollout before its next step",
		"resume":   "Let a paused rollout, or one its failures stopped, go on",
		"abort":    "Stop a rollout for good; the resources it moved stay moved",
		"rollback": "Move every resource the rollout moved back to its old version and spec, and end the rollout",
	}[verb]
	past := map[string]string{"pause": "paused", "resume": "resumed", "abort": "aborted", "rollback": "rolled back"}[verb]
	cmd := &cobra.Command{
		Use:     verb + " ID [--reason TEXT]",
		Short:   short,
		Example: fmt.Sprintf("  conctl rollout %s 3 --reason \"checking the dashboards\"", verb),
		Args:    exactArgs(1, "the rollout's ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usagef("rollout %s: the ID is a positive integer, as rollout list shows", args[0])
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			var r *convergev1.Rollout
			switch verb {
			case "pause":
				var res *convergev1.PauseRolloutResponse
				if res, err = a.client.PauseRollout(ctx, &convergev1.PauseRolloutRequest{RolloutId: id, Reason: reason}); err == nil {
					r = res.GetRollout()
				}
			case "resume":
				var res *convergev1.ResumeRolloutResponse
				if res, err = a.client.ResumeRollout(ctx, &convergev1.ResumeRolloutRequest{RolloutId: id, Reason: reason}); err == nil {
					r = res.GetRollout()
				}
			case "abort":
				var res *convergev1.AbortRolloutResponse
				if res, err = a.client.AbortRollout(ctx, &convergev1.AbortRolloutRequest{RolloutId: id, Reason: reason}); err == nil {
					r = res.GetRollout()
				}
			default:
				var res *convergev1.RollbackRolloutResponse
				if res, err = a.client.RollbackRollout(ctx, &convergev1.RollbackRolloutRequest{RolloutId: id, Reason: reason}); err == nil {
					r = res.GetRollout()
				}
			}
			if err != nil {
				return wrapf(err, "%s rollout %d", verb, id)
			}
			return a.printRollout(r, past)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the rollout's events")
	a.dryRunFlag(cmd, false)
	return cmd
}
