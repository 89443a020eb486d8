package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/devpg"
)

func pgBinCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pg-bin",
		Short: "Print the directory of the PostgreSQL server binaries, installing them if need be",
		Long: `Print the directory holding the PostgreSQL server binaries (initdb, postgres) that converge dev
would use: CONVERGE_PG_BIN when set, else the first found on PATH or in the usual install
locations (/usr/lib/postgresql/*/bin newest first, /usr/local/pgsql/bin, Homebrew's postgresql
formulas). When there are none and it runs as root on a system with apt-get (Debian, Ubuntu), it
installs the postgresql package first, as converge dev does; otherwise it fails, naming the
package to install. The test command (scripts/test.sh) runs it before the tests.`,
		Example: `  converge pg-bin
  export CONVERGE_PG_BIN=$(converge pg-bin)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := devpg.FindOrInstall(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), dir)
			return err
		},
	}
}
