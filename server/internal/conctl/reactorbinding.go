package conctl

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// reactorBindingAliases are the names of the reactor binding type.
var reactorBindingAliases = []string{"reactorbinding", "reactorbindings", "rb"}

func (a *app) getReactorBindingCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "reactorbinding NAME",
		Aliases: reactorBindingAliases[1:],
		Short:   "Show a reactor binding",
		Long: `Show a reactor binding: which kind it watches (WATCH, "/*" for every
version), on which transitions and label selector, and which reactor kind
is told.`,
		Example: `  conctl get reactorbinding notify-failures
  conctl get rb notify-failures -o yaml`,
		Args: exactArgs(1, "NAME, e.g. notify-failures"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.GetReactorBinding(ctx, &convergev1.GetReactorBindingRequest{Name: args[0]})
			if err != nil {
				return wrapf(err, "get reactorbinding %s", args[0])
			}
			return a.printReactorBindings([]*convergev1.ReactorBinding{resp.GetBinding()}, true)
		},
	}
}

func (a *app) listReactorBindingsCmd() *cobra.Command {
	var watchKind string
	cmd := &cobra.Command{
		Use:     "reactorbindings",
		Aliases: []string{"reactorbinding", "rb"},
		Short:   "List reactor bindings",
		Long:    `List every reactor binding, or those that watch one kind (--watch-kind).`,
		Example: `  conctl list reactorbindings
  conctl list rb --watch-kind greeting -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			resp, err := a.client.ListReactorBindings(ctx, &convergev1.ListReactorBindingsRequest{WatchKind: watchKind})
			if err != nil {
				return wrapf(err, "list reactorbindings")
			}
			bs := resp.GetBindings()
			sort.SliceStable(bs, func(i, j int) bool { return bs[i].GetName() < bs[j].GetName() })
			if len(bs) == 0 && a.output == formatTable {
				fmt.Fprintln(a.stderr, "No reactor bindings found.")
				return nil
			}
			return a.printReactorBindings(bs, false)
		},
	}
	cmd.Flags().StringVar(&watchKind, "watch-kind", "", "only bindings that watch this kind")
	return cmd
}

func (a *app) deleteReactorBindingCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "reactorbinding NAME",
		Aliases: reactorBindingAliases[1:],
		Short:   "Delete a reactor binding",
		Long: `Delete a reactor binding: its reactor hears of no further transitions.
To pause one instead, apply it again with "disabled: true".`,
		Example: `  conctl delete reactorbinding notify-failures`,
		Args:    exactArgs(1, "NAME, e.g. notify-failures"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := a.call(cmd.Context())
			defer cancel()
			if _, err := a.client.DeleteReactorBinding(ctx, &convergev1.DeleteReactorBindingRequest{Name: args[0]}); err != nil {
				return wrapf(err, "delete reactorbinding %s", args[0])
			}
			fmt.Fprintf(a.stdout, "reactorbinding %s deleted%s\n", args[0], a.dryRunMark())
			return nil
		},
	}
}

// printReactorBindings prints bindings as a table, or as JSON/YAML.
func (a *app) printReactorBindings(bs []*convergev1.ReactorBinding, single bool) error {
	if a.machine() {
		msgs := make([]proto.Message, len(bs))
		for i, b := range bs {
			msgs[i] = b
		}
		return a.printMessages(msgs, single)
	}
	t := newTable(a.stdout, "NAME", "WATCH", "TRANSITIONS", "SELECTOR", "REACTOR", "DISABLED", "AGE")
	now := a.now()
	for _, b := range bs {
		watch := b.GetWatchKind() + "/*"
		if v := b.GetWatchKindVersion(); v > 0 {
			watch = kindID(b.GetWatchKind(), v)
		}
		disabled := ""
		if b.GetDisabled() {
			disabled = "yes"
		}
		t.row(b.GetName(), watch, strings.Join(b.GetTransitions(), ","), truncate(b.GetLabelSelector(), maxMessageWidth),
			kindID(b.GetReactorKind(), b.GetReactorKindVersion()), disabled, age(now, b.GetCreatedAt()))
	}
	return t.flush()
}
