package conctl

import (
	"context"
	"errors"
	"fmt"
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
			fmt.Fprintf(a.stdout, "kind %s deleted\n", ref)
			return nil
		},
	}
}

func (a *app) deleteResourceCmd() *cobra.Command {
	var wf waitFlags
	cmd := &cobra.Command{
		Use:     "resource KIND/NAME",
		Aliases: resourceAliases[1:],
		Short:   "Request the deletion of a resource",
		Long: `Request the deletion of a resource of --namespace, everything it owns and
everything that depends on it. With --wait, wait until it is gone.`,
		Example: `  conctl delete resource greeting/hello-world
  conctl delete res greeting/hello-world -n team-a --wait --timeout 10m`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if err := wf.check(a.stderr); err != nil {
				return err
			}
			return a.deleteResource(cmd.Context(), ref, wf.wait, wf.timeout)
		},
	}
	wf.register(cmd, "wait until the resource is gone")
	return cmd
}

func (a *app) deleteResource(ctx context.Context, ref resourceRef, wait bool, timeout time.Duration) error {
	cctx, cancel := a.call(ctx)
	defer cancel()
	_, err := a.client.DeleteResource(cctx, &convergev1.DeleteResourceRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name})
	if err != nil {
		return wrapf(err, "delete resource %s", ref)
	}
	if !wait {
		fmt.Fprintf(a.stdout, "resource %s deleting\n", ref)
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
