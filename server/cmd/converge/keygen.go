package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/secret"
)

func keygenCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "keygen",
		Short: "Print a new key-encryption key for secret values",
		Long: `Print a new random key-encryption key (base64 of 32 bytes) for --secret-key-file or
` + secret.EnvVar + `. To rotate, put the new key on the first line of the key file, keep the old
one below it, restart the replicas, and remove the old line once converge_secret_stale_rows is 0
(see docs/secrets.md).`,
		Example: `  converge keygen > /etc/converge/secret.key && chmod 600 /etc/converge/secret.key`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := secret.NewKeyText()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), k)
			return err
		},
	}
}
