package main

import (
	"fmt"

	"github.com/spf13/cobra"

	std "github.com/convergehq/converge/catalog/std"
	"github.com/convergehq/converge/stdworker/internal/catalog"
)

func kindsCmd(f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kinds",
		Short: "Work with the std kinds built into stdworker, and generate kinds from Terraform providers",
		Args:  subcommandsOnly,
		// A RunE makes cobra check Args here; "kinds" alone shows the help.
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	apply := &cobra.Command{
		Use:   "apply",
		Short: "Apply the std kinds' manifests (catalog/std, built in) to the server",
		Long: `Apply the manifests of the std kinds (std.shell, and those of the other std providers
built into this binary) to the server, so that stdworker can serve them. Applying is
idempotent: an unchanged manifest is reported "unchanged".`,
		Example: `  stdworker kinds apply
  stdworker kinds apply --server http://converge:7070`,
		Args: subcommandsOnly,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ms, err := catalog.Read(std.FS)
			if err != nil {
				return fmt.Errorf("built-in catalog: %w", err)
			}
			tok, err := f.token()
			if err != nil {
				return err
			}
			control, err := f.control(tok)
			if err != nil {
				return err
			}
			applied, err := catalog.Apply(cmd.Context(), control, ms)
			for _, a := range applied {
				fmt.Fprintf(cmd.OutOrStdout(), "kind %s/v%d %s\n", a.Manifest.Manifest.GetKind(), a.Manifest.Manifest.GetKindVersion(), a.Result)
			}
			return err
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the std kinds' manifests built into stdworker",
		Args:  subcommandsOnly,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ms, err := catalog.Read(std.FS)
			if err != nil {
				return fmt.Errorf("built-in catalog: %w", err)
			}
			for _, m := range ms {
				fmt.Fprintf(cmd.OutOrStdout(), "%s/v%d\tcatalog/std/%s\n", m.Manifest.GetKind(), m.Manifest.GetKindVersion(), m.File)
			}
			return nil
		},
	}
	cmd.AddCommand(apply, list, generateCmd())
	return cmd
}
