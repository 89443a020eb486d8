package conctl

import (
	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func (a *app) manageCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "manage KIND/NAME full|observe|kind",
		Short: "Set a resource's management policy: managed in full, or only observed",
		Long: `Manage sets a resource's management policy:

  full     Converge creates, updates and deletes its external object
  observe  Converge only observes it: the kind's observe reaction reports
           what exists; nothing is created, changed or deleted, and
           deleting the resource leaves the object in place
  kind     the resource follows its kind version's policy again

The change is one step, recorded as a ManagementPolicyChanged event with
you as its actor and --reason; the resource's reconcile then runs again
under the new policy (promoted to full, it converges the object on its
spec). A task of the old policy still running is left to finish, and its
result is discarded.`,
		Example: `  # Adopted read-only by conctl import; take it over once its status looks right
  conctl manage net.vpc/prod-main full --reason "reviewed the observed status"

  # Hands off: keep reporting, stop changing
  conctl manage net.vpc/prod-main observe --reason "frozen for the migration"`,
		Args: exactArgs(2, "KIND/NAME and full, observe or kind, e.g. net.vpc/prod-main full"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			policy := args[1]
			switch policy {
			case "full", "observe":
			case "kind":
				policy = ""
			default:
				return usagef("%q is not a management policy: want full, observe or kind", args[1])
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.SetManagementPolicy(ctx, &convergev1.SetManagementPolicyRequest{
				Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, ManagementPolicy: policy, Reason: reason,
			})
			if err != nil {
				return wrapf(err, "set the management policy of %s", ref)
			}
			r := resp.GetResource()
			if resp.GetChanged() {
				a.reportLine("resource %s managed: %s", ref, r.GetEffectiveManagementPolicy())
			} else {
				a.reportLine("resource %s unchanged: managed: %s", ref, r.GetEffectiveManagementPolicy())
			}
			return a.printActionResult(r)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", reasonUsage)
	return cmd
}
