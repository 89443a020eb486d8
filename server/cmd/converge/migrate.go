package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/migrate"
)

func migrateCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply, roll back or show the database schema migrations",
		Long: `The schema ships inside the binary as numbered migrations. Every migration has a working down.
Migrations take an advisory lock, so replicas starting together apply them once.`,
	}
	cmd.PersistentFlags().StringVar(&databaseURL, "database-url", "", "PostgreSQL URL (env CONVERGE_DATABASE_URL)")
	url := func() (string, error) {
		if databaseURL == "" {
			databaseURL = os.Getenv("CONVERGE_DATABASE_URL")
		}
		if databaseURL == "" {
			return "", errors.New("--database-url (or CONVERGE_DATABASE_URL) is required")
		}
		return databaseURL, nil
	}
	up := &cobra.Command{
		Use:   "up",
		Short: "Apply every pending migration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url()
			if err != nil {
				return err
			}
			steps, err := migrate.Up(cmd.Context(), u)
			for _, s := range steps {
				fmt.Println(s)
			}
			if err == nil && len(steps) == 0 {
				fmt.Println("already up to date")
			}
			return err
		},
	}
	down := &cobra.Command{
		Use:   "down [VERSION]",
		Short: "Roll back the last migration, or every migration after VERSION (0: all)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := url()
			if err != nil {
				return err
			}
			var to int64
			if len(args) == 1 {
				if to, err = strconv.ParseInt(args[0], 10, 64); err != nil || to < 0 {
					return fmt.Errorf("VERSION %q: want a migration version number, 0 for all", args[0])
				}
			} else {
				cur, err := migrate.Version(cmd.Context(), u)
				if err != nil {
					return err
				}
				if cur == 0 {
					fmt.Println("nothing to roll back")
					return nil
				}
				states, err := migrate.Status(cmd.Context(), u)
				if err != nil {
					return err
				}
				for _, s := range states {
					if s.Applied() && s.Version < cur && s.Version > to {
						to = s.Version
					}
				}
			}
			steps, err := migrate.Down(cmd.Context(), u, to)
			for _, s := range steps {
				fmt.Println(s)
			}
			return err
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "List the migrations and whether each is applied",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url()
			if err != nil {
				return err
			}
			states, err := migrate.Status(cmd.Context(), u)
			for _, s := range states {
				fmt.Println(s)
			}
			return err
		},
	}
	cmd.AddCommand(up, down, status)
	return cmd
}
