package conctl

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// reasonUsage is the help of --reason on every operator action.
const reasonUsage = "why, recorded with the action in the resource's events"

// waitFlags are --wait and --timeout of every command that can wait.
// --timeout bounds the whole wait, which is what "apply --wait --timeout 2m"
// says to a reader; each call to the server within it is bounded by the
// global --request-timeout. --wait-timeout, the old name of --timeout,
// still works (hidden, with a warning), so scripts keep running.
type waitFlags struct {
	wait    bool
	timeout time.Duration
	oldName *pflag.Flag // --wait-timeout
}

// defaultWaitTimeout is how long --wait waits unless --timeout says.
const defaultWaitTimeout = 5 * time.Minute

func (fl *waitFlags) register(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.BoolVar(&fl.wait, "wait", false, what)
	f.DurationVar(&fl.timeout, "timeout", defaultWaitTimeout, "how long --wait waits in all (each call to the server is bounded by --request-timeout)")
	f.DurationVar(&fl.timeout, "wait-timeout", defaultWaitTimeout, "old name of --timeout")
	// Not pflag's MarkDeprecated: cobra prints its notice on standard
	// output, into what -o json produces.
	fl.oldName = f.Lookup("wait-timeout")
	fl.oldName.Hidden = true
}

// check refuses a --timeout that is not positive, and warns on stderr when
// the old name was used.
func (fl *waitFlags) check(stderr io.Writer) error {
	if fl.oldName != nil && fl.oldName.Changed {
		fmt.Fprintln(stderr, "warning: --wait-timeout is now called --timeout; the old name will go away")
	}
	if fl.timeout <= 0 {
		return usagef("--timeout: %s is not positive", fl.timeout)
	}
	return nil
}

func (a *app) rollbackCmd() *cobra.Command {
	var reason string
	var to int64
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "rollback KIND/NAME --to GENERATION",
		Short: "Apply an earlier revision's spec to a resource again",
		Long: `Rollback takes the spec of an earlier revision of a resource (see
"conctl history") and applies it again as a new generation; the resource
then reconciles towards it like after any spec change. Its history records
the rollback.

The server keeps a limited number of revisions; rolling back to one it no
longer keeps fails and says so.

With --wait, rollback then waits until the new generation is Ready (exit 0)
or Failed (exit 1).`,
		Example: `  conctl history greeting/hello-world
  conctl rollback greeting/hello-world --to 3 --reason "replicas: 5 overloaded the database"
  conctl rollback vpc/prod-main --to 7 --wait -n team-a`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if to < 1 {
				return usagef("--to: want the generation to roll back to (a positive number; see conctl history %s/%s)", ref.kind, ref.name)
			}
			if err := wf.check(a.stderr); err != nil {
				return err
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.RollbackResource(ctx, &convergev1.RollbackResourceRequest{
				Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, Generation: to, Reason: reason,
			})
			if err != nil {
				return wrapf(err, "rollback resource %s", ref)
			}
			r := resp.GetResource()
			a.reportLine("resource %s rolled back to generation %d (now generation %d)", ref, to, r.GetGeneration())
			if wf.wait {
				return a.awaitAction(cmd.Context(), ref, atGeneration(r.GetGeneration()), wf.timeout)
			}
			return a.printActionResult(r)
		},
	}
	cmd.Flags().Int64Var(&to, "to", 0, "the generation whose spec to apply again (required)")
	cmd.Flags().StringVar(&reason, "reason", "", reasonUsage)
	wf.register(cmd, "wait until the new generation is Ready or Failed")
	a.dryRunFlag(cmd, false)
	return cmd
}

func (a *app) quarantineCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "quarantine KIND/NAME --reason REASON",
		Short: "Freeze a resource: no work runs for it until it is unquarantined",
		Long: `Quarantine freezes a resource: no reconcile, teardown or operation runs
for it, its phase is Quarantined, and the composites above it stop
counting it or waiting for it. Use it on a resource that keeps failing and
harms others, or whose teardown is stuck and holds up its owners.

A reason is required; it is recorded in the resource's events, with who
quarantined it. "conctl unquarantine" lets work run again.`,
		Example: `  conctl quarantine greeting/hello-world --reason "its handler crashes the worker"
  conctl quarantine vpc/old --reason "teardown stuck on a dependency; unblocking its owner" -n team-a`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if reason == "" {
				return usagef("--reason is required: say why the resource is quarantined (it is recorded in its events)")
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.QuarantineResource(ctx, &convergev1.QuarantineResourceRequest{
				Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, Reason: reason,
			})
			if err != nil {
				return wrapf(err, "quarantine resource %s", ref)
			}
			a.reportLine("resource %s quarantined", ref)
			return a.printActionResult(resp.GetResource())
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", reasonUsage+" (required)")
	a.dryRunFlag(cmd, false)
	return cmd
}

func (a *app) unquarantineCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "unquarantine KIND/NAME",
		Short: "Let work run again for a quarantined resource",
		Long: `Unquarantine lifts a quarantine: the resource reconciles again from where
it was, and the composites above it count it again.`,
		Example: `  conctl unquarantine greeting/hello-world
  conctl unquarantine greeting/hello-world --reason "worker fixed in v1.4.2"`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.UnquarantineResource(ctx, &convergev1.UnquarantineResourceRequest{
				Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, Reason: reason,
			})
			if err != nil {
				return wrapf(err, "unquarantine resource %s", ref)
			}
			a.reportLine("resource %s unquarantined", ref)
			return a.printActionResult(resp.GetResource())
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", reasonUsage)
	a.dryRunFlag(cmd, false)
	return cmd
}

func (a *app) reconcileCmd() *cobra.Command {
	var reason string
	var wf waitFlags
	cmd := &cobra.Command{
		Use:   "reconcile KIND/NAME",
		Short: "Run a resource's reconcile now, even if it is Ready or failed terminally",
		Long: `Reconcile asks the server to run the resource's reconcile again at its
current generation, now: for a resource that is Ready but may have drifted,
or one that failed terminally for a reason since fixed outside Converge.

With --wait, reconcile then waits until that reconcile has run and the
resource is Ready (exit 0), or until it failed (exit 1).`,
		Example: `  conctl reconcile greeting/hello-world
  conctl reconcile greeting/hello-world --reason "quota raised" --wait`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if err := wf.check(a.stderr); err != nil {
				return err
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.ReconcileResource(ctx, &convergev1.ReconcileResourceRequest{
				Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, Reason: reason,
			})
			if err != nil {
				return wrapf(err, "reconcile resource %s", ref)
			}
			a.reportLine("resource %s reconcile requested", ref)
			if wf.wait {
				return a.awaitAction(cmd.Context(), ref, afterReconcile(resp.GetResource()), wf.timeout)
			}
			return a.printActionResult(resp.GetResource())
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", reasonUsage)
	wf.register(cmd, "wait until the reconcile has run and the resource is Ready or Failed")
	a.dryRunFlag(cmd, false)
	return cmd
}

// printActionResult prints the resource an action left, for -o json and
// -o yaml; the table output is the line already printed.
func (a *app) printActionResult(r *convergev1.Resource) error {
	if !a.machine() {
		return nil
	}
	return a.printMessages([]proto.Message{r}, true)
}

// awaitAction waits for the outcome of an action, prints it and turns it
// into conctl's result.
func (a *app) awaitAction(ctx context.Context, ref resourceRef, goal actionGoal, timeout time.Duration) error {
	r, err := a.waitOutcome(ctx, ref, goal, timeout)
	if r != nil && a.machine() {
		if perr := a.printMessages([]proto.Message{r}, true); perr != nil && err == nil {
			err = perr
		}
	}
	if err == nil {
		a.reportLine("resource %s ready at generation %d", ref, r.GetGeneration())
	}
	return err
}
