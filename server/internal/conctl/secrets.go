package conctl

import (
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

func (a *app) secretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "Read a resource's secret values in clear",
		Long: `Secret properties (writeOnly: true or x-converge-secret: true in a kind's schemas) are
stored sealed and shown everywhere as the redaction marker "(secret:<fingerprint>)". Reading them in
clear needs a read-secrets grant on the kind (--grant read-secrets:KINDS=IDENTITIES on the server,
or admin), and every read is recorded as an event naming the caller and the reason.`,
		Example: `  conctl secrets read data.db/orders --reason "checking the app's connection string"`,
	}
	cmd.AddCommand(a.secretsReadCmd())
	return cmd
}

func (a *app) secretsReadCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "read KIND/NAME --reason REASON",
		Short: "Print a resource's spec and status with their secret values in clear",
		Long: `Read prints the resource's spec and status with every secret value in clear, as JSON
(or YAML with -o yaml). A reason is required; it is recorded in the resource's events with who read
the secrets ("conctl events KIND/NAME" shows them).`,
		Example: `  conctl secrets read data.db/orders --reason "rotating the app's connection string by hand"`,
		Args:    exactArgs(1, "KIND/NAME, e.g. data.db/orders"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if reason == "" {
				return usagef("--reason is required: say why the secrets are read (it is recorded in the resource's events)")
			}
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.ReadResourceSecrets(ctx, &convergev1.ReadResourceSecretsRequest{
				Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, Reason: reason,
			})
			if err != nil {
				return wrapf(err, "read the secrets of %s", ref)
			}
			return a.printMessages([]proto.Message{resp}, true)
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the secrets are read; recorded in the resource's events (required)")
	return cmd
}
