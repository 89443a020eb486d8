package conctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func (a *app) deleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete (kind NAME/VERSION | resource KIND/NAME | providerconfig KIND/VERSION/NAME | reactorbinding NAME)",
		Short: "Delete a kind version, a resource, a provider config or a reactor binding",
		Long: `Delete a kind version (refused while resources use it), a provider config
(refused while resources use it), a reactor binding, or request the
deletion of a resource: it shows phase Deleting while its teardown runs,
dependents first, and is gone when the teardown is done.`,
		Example: `  conctl delete resource greeting/hello-world
  conctl delete resource greeting/hello-world --wait
  conctl delete kind greeting/v1
  conctl delete pc greeting/v1/eu
  conctl delete rb notify-failures`,
		Args: cobra.ArbitraryArgs,
		RunE: typeArgs,
	}
	cmd.AddCommand(a.deleteKindCmd(), a.deleteResourceCmd(), a.deleteProviderConfigCmd(), a.deleteReactorBindingCmd())
	a.dryRunFlag(cmd, true)
	return cmd
}

func (a *app) deleteKindCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "kind NAME/VERSION",
		Aliases: kindAliases[1:],
		Short:   "Delete one version of a kind",
		Long:    `Delete one version of a kind. The server refuses while resources use it.`,
		Example: `  conctl delete kind greeting/v1`,
		Args:    exactArgs(1, "NAME/VERSION, e.g. greeting/v1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseKindRef(args[0])
			if err != nil {
				return err
			}
			if ref.version == 0 {
				return usagef("delete kind needs NAME/VERSION, e.g. %s/v1: versions are deleted one at a time", ref.kind)
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			if _, err := a.client.DeleteKind(ctx, &convergev1.DeleteKindRequest{Kind: ref.kind, KindVersion: ref.version}); err != nil {
				return wrapf(err, "delete kind %s", ref)
			}
			fmt.Fprintf(a.stdout, "kind %s deleted%s\n", ref, a.dryRunMark())
			return nil
		},
	}
}

func (a *app) deleteResourceCmd() *cobra.Command {
	var wf waitFlags
	var ab abandonFlags
	cmd := &cobra.Command{
		Use:     "resource KIND/NAME",
		Aliases: resourceAliases[1:],
		Short:   "Request the deletion of a resource",
		Long: `Request the deletion of a resource of --namespace, everything it owns and
everything that depends on it. With --wait, wait until it is gone.

With --dry-run, the server answers what the deletion would do and changes
nothing: the resources it would tear down, in the order teardown reaches
them (children and dependents first).

--abandon is the way out of a teardown that can never succeed: it removes
the resource from Converge at once without running any teardown, and
prints what it removed, since whatever those resources created outside
Converge may remain. It needs the admin role and a --reason, which is
recorded on each resource's Abandoned event. A resource that owns
children is abandoned only with --subtree, which takes them all.`,
		Example: `  conctl delete resource greeting/hello-world
  conctl delete res greeting/hello-world -n team-a --wait --timeout 10m
  conctl delete resource stack/web --dry-run
  conctl delete resource bucket/logs --abandon --reason "account closed; removed by hand"
  conctl delete resource stack/web --abandon --subtree --reason "region decommissioned"`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if err := wf.check(a.stderr); err != nil {
				return err
			}
			if ab.abandon || ab.subtree {
				return a.abandonResource(cmd.Context(), ref, ab)
			}
			return a.deleteResource(cmd.Context(), ref, wf.wait, wf.timeout)
		},
	}
	wf.register(cmd, "wait until the resource is gone")
	cmd.Flags().BoolVar(&ab.abandon, "abandon", false, "remove it without running teardown (admin role; needs --reason)")
	cmd.Flags().BoolVar(&ab.subtree, "subtree", false, "with --abandon: everything it owns too")
	cmd.Flags().StringVar(&ab.reason, "reason", "", "why, with --abandon (required; recorded on the events)")
	return cmd
}

type abandonFlags struct {
	abandon, subtree bool
	reason           string
}

// abandonResource removes a resource without teardown and says what it
// left behind.
func (a *app) abandonResource(ctx context.Context, ref resourceRef, ab abandonFlags) error {
	switch {
	case !ab.abandon:
		return usagef("--subtree: only with --abandon (a plain delete always takes everything the resource owns)")
	case strings.TrimSpace(ab.reason) == "":
		return usagef("--abandon: needs --reason, which is recorded with what is left behind")
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.DeleteResource(cctx, &convergev1.DeleteResourceRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name,
		Abandon: true, Subtree: ab.subtree, Reason: ab.reason})
	if err != nil {
		return wrapf(err, "abandon resource %s", ref)
	}
	gone := resp.GetAbandoned()
	fmt.Fprintf(a.stdout, "resource %s abandoned%s: %d resource(s) removed without teardown; what they created outside Converge may remain:\n",
		ref, a.dryRunMark(), len(gone))
	for _, r := range gone {
		fmt.Fprintf(a.stdout, "  %s/%s/%s\n", r.GetNamespace(), r.GetKind(), r.GetName())
	}
	return nil
}

func (a *app) deleteResource(ctx context.Context, ref resourceRef, wait bool, timeout time.Duration) error {
	cctx, cancel := a.call(ctx)
	defer cancel()
	_, err := a.client.DeleteResource(cctx, &convergev1.DeleteResourceRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name})
	if err != nil {
		return wrapf(err, "delete resource %s", ref)
	}
	if !wait {
		fmt.Fprintf(a.stdout, "resource %s deleting%s\n", ref, a.dryRunMark())
		return nil
	}
	wctx, wcancel := context.WithTimeout(ctx, timeout)
	defer wcancel()
	last, err := a.client.WaitFor(wctx, ref.namespace, ref.kind, ref.name, func(*convergev1.Resource) bool { return false })
	switch {
	case connect.CodeOf(err) == connect.CodeNotFound:
		fmt.Fprintf(a.stdout, "resource %s deleted\n", ref)
		return nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		state := "not yet read"
		if last != nil {
			state = "phase " + or(last.GetPhase(), "unknown")
			if m := resourceMessage(last); m != "" {
				state += ": " + m
			}
		}
		return fmt.Errorf("timed out after %s waiting for resource %s to be deleted (%s)", timeout, ref, state)
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while waiting for resource %s to be deleted", ref)
	}
	return wrapf(err, "wait for resource %s to be deleted", ref)
}
