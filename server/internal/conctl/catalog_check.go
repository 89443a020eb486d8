package conctl

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/catalog"
)

func (a *app) catalogCheckCmd() *cobra.Command {
	var base string
	cmd := &cobra.Command{
		Use:   "check [DIR] [--base GIT_REF]",
		Short: "Check a kind catalog offline, like a compiler",
		Long: `Check reads the catalog in DIR (default "catalog") and checks every rule
without a server: manifests compile (C1), schemas are well-formed (C2),
examples and provider configs validate (C3), CEL graphs type-check against
the catalog's kinds and the std kinds (C4), Starlark bundles load (C5),
versions are contiguous (C7), every team has OWNERS (C8), a kind has one
team (C9) that its manifests name as owner (C10), and every document is of
the right type in the right place (C11).

With --base, it also reads DIR as it is at GIT_REF (e.g. origin/main) and
refuses a breaking change to a version the base has, or its removal (C6):
a breaking change needs a new version.

It prints every problem as "file:line: path: message (rule)", then a count,
and exits 1 if there is any.`,
		Example: `  # Check the catalog of this repository
  conctl catalog check

  # In CI: also refuse breaking changes against the target branch
  conctl catalog check catalog --base origin/main

  # As JSON, for tools
  conctl catalog check -o json`,
		// Check needs no server: it skips the root's client setup.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if formats := outputFormats(cmd); !slices.Contains(formats, a.output) {
				return usageError{fmt.Errorf("--output: %q is not one of %s", a.output, strings.Join(formats, ", "))}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := catalogDir(cmd, args)
			if err != nil {
				return err
			}
			return a.catalogCheck(cmd.Context(), dir, base)
		},
	}
	cmd.Flags().StringVar(&base, "base", "", "git ref (branch, tag or commit) to check stability (C6) against")
	return cmd
}

func (a *app) catalogCheck(ctx context.Context, dir, baseRef string) error {
	head, err := a.loadCatalog(dir)
	if err != nil {
		return err
	}
	var base *catalog.Catalog
	if baseRef == "" {
		fmt.Fprintln(a.stderr, "note: stability (C6) not checked: give --base GIT_REF to compare with a base")
	} else {
		fsys, err := gitTree(ctx, dir, baseRef)
		if err != nil {
			return err
		}
		if base, err = catalog.Load(fsys, ".", catalog.WithSourceDir(dir), catalog.WithNamespace(a.namespace)); err != nil {
			return fmt.Errorf("--base %s: %w", baseRef, err)
		}
	}
	ps := head.Check(ctx, base)
	if err := a.printProblems(ps); err != nil {
		return err
	}
	if len(ps) > 0 {
		return fmt.Errorf("%s", problemSummary(ps))
	}
	if a.output == formatTable {
		s := head.Stats()
		fmt.Fprintf(a.stdout, "catalog ok: %s, %s, %s, %s\n", plural(s.Teams, "team"), plural(s.Kinds, "kind"),
			plural(s.Versions, "version"), plural(s.Examples, "example"))
	}
	return nil
}
