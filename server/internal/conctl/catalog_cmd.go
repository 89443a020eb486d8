package conctl

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/convergehq/converge/server/internal/catalog"
)

// defaultCatalogDir is the catalog directory when none is given.
const defaultCatalogDir = "catalog"

// catalogCmd is `conctl catalog`: check and publish a kind catalog.
func (a *app) catalogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Check and publish a kind catalog",
		Long: `A catalog is a directory tree in which platform teams own versioned kinds:

  catalog/<team>/OWNERS                 one owner per line
  catalog/<team>/<kind>/README.md       what the kind is and how it is served
  catalog/<team>/<kind>/v<N>.yaml       a manifest, or a std.graph resource
                                        that defines the kind with a CEL graph
  catalog/<team>/<kind>/examples/       resources of the kind
  catalog/<team>/<kind>/configs/        provider configs of the kind
  catalog/<team>/<kind>/bindings/       reactor bindings
  catalog/<team>/<kind>/<dir>/main.star Starlark bundles

"check" checks it offline, like a compiler; "publish" applies it to a
server. See docs/catalog.md for the rules (C1-C12).`,
		Example: `  # Check the catalog in CI, refusing breaking changes against main
  conctl catalog check catalog --base origin/main

  # Publish it once merged
  conctl catalog publish catalog`,
	}
	cmd.AddCommand(a.catalogCheckCmd(), a.catalogPublishCmd())
	return cmd
}

// catalogDir is the DIR argument of a catalog command.
func catalogDir(cmd *cobra.Command, args []string) (string, error) {
	switch len(args) {
	case 0:
		return defaultCatalogDir, nil
	case 1:
		if args[0] == "" {
			return "", usagef("%s: DIR must not be empty", cmd.CommandPath())
		}
		return args[0], nil
	}
	return "", usagef("%s takes at most one DIR, got %q", cmd.CommandPath(), args)
}

// loadCatalog reads the catalog in dir, naming files as dir/... in problems.
func (a *app) loadCatalog(dir string) (*catalog.Catalog, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", dir, reasonOf(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("catalog %s: not a directory", dir)
	}
	return catalog.Load(os.DirFS(dir), ".", catalog.WithSourceDir(dir), catalog.WithNamespace(a.namespace))
}

// reasonOf is an OS error without the path the message already names.
func reasonOf(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// problemSummary is "3 problems in 2 files".
func problemSummary(ps []catalog.Problem) string {
	var files []string
	for _, p := range ps {
		if !slices.Contains(files, p.File) {
			files = append(files, p.File)
		}
	}
	return plural(len(ps), "problem") + " in " + plural(len(files), "file")
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// printProblems prints problems one a line (or as a JSON or YAML array).
func (a *app) printProblems(ps []catalog.Problem) error {
	if a.output != formatTable {
		if ps == nil {
			ps = []catalog.Problem{}
		}
		return a.printValue(ps)
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String())
		b.WriteByte('\n')
	}
	_, err := fmt.Fprint(a.stdout, b.String())
	return err
}
