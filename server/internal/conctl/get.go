package conctl

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Aliases accepted wherever a type is named.
var (
	resourceAliases = []string{"resource", "resources", "res"}
	kindAliases     = []string{"kind", "kinds", "manifest", "manifests"}
)

func (a *app) getCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get (kind NAME[/VERSION] | resource KIND/NAME | providerconfig KIND/VERSION/NAME | reactorbinding NAME)",
		Short: "Show one kind, resource, provider config or reactor binding",
		Long: `Get shows one kind, resource, provider config (pc) or reactor binding (rb):
a table by default, or the whole object with -o json or -o yaml.`,
		Example: `  conctl get resource greeting/hello-world
  conctl get resource greeting/hello-world -n team-a -o yaml
  conctl get kind greeting          # every version of the kind
  conctl get kind greeting/v2 -o json
  conctl get pc greeting/v1/default -o yaml
  conctl get rb notify-failures`,
		Args: cobra.ArbitraryArgs,
		RunE: typeArgs,
	}
	cmd.AddCommand(a.getKindCmd(), a.getResourceCmd(), a.getProviderConfigCmd(), a.getReactorBindingCmd())
	return cmd
}

func (a *app) getKindCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "kind NAME[/VERSION]",
		Aliases: kindAliases[1:],
		Short:   "Show a kind: one version, or every version",
		Long: `Show a kind's manifest. NAME/VERSION (e.g. greeting/v2 or greeting/2) shows
that version; NAME alone shows every version of the kind.`,
		Example: `  conctl get kind greeting
  conctl get kind greeting/v1 -o yaml`,
		Args: exactArgs(1, "NAME[/VERSION], e.g. greeting/v1"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseKindRef(args[0])
			if err != nil {
				return err
			}
			return a.getKind(cmd.Context(), ref)
		},
	}
}

func (a *app) getKind(ctx context.Context, ref kindRef) error {
	ctx, cancel := a.call(ctx)
	defer cancel()
	if ref.version > 0 {
		resp, err := a.client.GetKind(ctx, &convergev1.GetKindRequest{Kind: ref.kind, KindVersion: ref.version})
		if err != nil {
			return wrapf(err, "get kind %s", ref)
		}
		return a.printKinds([]*convergev1.KindManifest{resp.GetManifest()}, true)
	}
	resp, err := a.client.ListKinds(ctx, &convergev1.ListKindsRequest{Kind: ref.kind})
	if err != nil {
		return wrapf(err, "get kind %s", ref.kind)
	}
	var versions []*convergev1.KindManifest
	for _, m := range resp.GetManifests() {
		if m.GetKind() == ref.kind {
			versions = append(versions, m)
		}
	}
	if len(versions) == 0 {
		return connect.NewError(connect.CodeNotFound, fmt.Errorf("kind %q not found (list them with: conctl list kinds)", ref.kind))
	}
	return a.printKinds(sortKinds(versions), false)
}

func (a *app) getResourceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "resource KIND/NAME",
		Aliases: resourceAliases[1:],
		Short:   "Show a resource",
		Long: `Show a resource of --namespace. The table has its phase, generations and
the message that explains its phase; -o wide adds the composite that owns
it; -o json and -o yaml print the whole resource, spec and status included.`,
		Example: `  conctl get resource greeting/hello-world
  conctl get resource vpc/prod-main -o wide
  conctl get res greeting/hello-world -n team-a -o json`,
		Args: exactArgs(1, "KIND/NAME, e.g. greeting/hello-world"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			r, err := a.getResource(cmd.Context(), ref)
			if err != nil {
				return err
			}
			return a.printResources([]*convergev1.Resource{r}, true)
		},
	}
	return withFormats(cmd, formatTable, formatWide, formatJSON, formatYAML)
}

func (a *app) getResource(ctx context.Context, ref resourceRef) (*convergev1.Resource, error) {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: ref.namespace, Kind: ref.kind, Name: ref.name})
	if err != nil {
		return nil, wrapf(err, "get resource %s", ref)
	}
	return resp.GetResource(), nil
}

// typeArgs runs for a command whose subcommands are types, when no
// subcommand matched: args name no known type.
func typeArgs(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(args) == 0 {
		return usagef("%s needs a type: one of %s", cmd.CommandPath(), strings.Join(names, ", "))
	}
	return usagef("%s: unknown type %q (one of %s)", cmd.CommandPath(), args[0], strings.Join(names, ", "))
}

// exactArgs wants n arguments described by what.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s needs %s", cmd.CommandPath(), what)
		}
		return nil
	}
}
