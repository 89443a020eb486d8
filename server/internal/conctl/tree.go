package conctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Limits of a tree request, as the API defines them, and what conctl asks
// for by default: enough to find a culprit, small enough for a screen.
const (
	maxTreeDepth        = 10
	maxTreeChildren     = 1000
	defaultTreeDepth    = 3
	defaultTreeChildren = 20
)

// asciiUsage is the help of --ascii, wherever a tree is drawn.
const asciiUsage = "draw trees with ASCII characters instead of box-drawing ones"

type treeFlags struct {
	depth, children int
	ascii           bool
}

func (a *app) treeCmd() *cobra.Command {
	var fl treeFlags
	cmd := &cobra.Command{
		Use:   "tree KIND/NAME",
		Short: "Show a composite and its descendants, with phases and the culprit path",
		Long: `Tree draws a resource and the resources it owns, level by level, with each
one's phase and the message that explains it. Resources that are not Ready
come first, and those on the path from the resource to a culprit (a
descendant that keeps it from being Ready) are marked with "*".

The tree stops --depth levels below the resource and shows at most
--children children of each resource; "... and N more" counts the rest.

-o json and -o yaml print the tree as the API returns it (a TreeNode).`,
		Example: `  conctl tree landingzone/acme
  conctl tree landingzone/acme --depth 10 --children 1000
  conctl tree landingzone/acme --ascii > tree.txt
  conctl tree landingzone/acme -o json`,
		Args: exactArgs(1, "KIND/NAME, e.g. landingzone/acme"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if err := fl.check(); err != nil {
				return err
			}
			return a.tree(cmd.Context(), ref, fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.depth, "depth", defaultTreeDepth, fmt.Sprintf("levels below the resource to show, 1-%d", maxTreeDepth))
	f.IntVar(&fl.children, "children", defaultTreeChildren, fmt.Sprintf("children shown per resource, 1-%d; the rest are counted", maxTreeChildren))
	f.BoolVar(&fl.ascii, "ascii", false, asciiUsage)
	return cmd
}

func (fl treeFlags) check() error {
	if fl.depth < 1 || fl.depth > maxTreeDepth {
		return usagef("--depth: %d is not in 1..%d", fl.depth, maxTreeDepth)
	}
	if fl.children < 1 || fl.children > maxTreeChildren {
		return usagef("--children: %d is not in 1..%d", fl.children, maxTreeChildren)
	}
	return nil
}

func (a *app) tree(ctx context.Context, ref resourceRef, fl treeFlags) error {
	root, err := a.getTree(ctx, ref, fl.depth, fl.children)
	if err != nil {
		return wrapf(err, "tree of %s", ref)
	}
	if a.machine() {
		return a.printMessages([]proto.Message{root}, true)
	}
	view, err := writeTree(a.stdout, root, ref.namespace, treeStyleFor(fl.ascii))
	if err != nil {
		return err
	}
	if view.marked {
		fmt.Fprintln(a.stdout, culpritLegend)
	}
	return nil
}

// getTree fetches the tree under ref, depth levels deep with at most
// children children per node.
func (a *app) getTree(ctx context.Context, ref resourceRef, depth, children int) (*convergev1.TreeNode, error) {
	ctx, cancel := a.call(ctx)
	defer cancel()
	resp, err := a.client.GetResourceTree(ctx, &convergev1.GetResourceTreeRequest{
		Namespace: ref.namespace, Kind: ref.kind, Name: ref.name,
		Depth: int32(depth), ChildrenPerNode: int32(children),
	})
	if err != nil {
		return nil, err
	}
	if resp.GetRoot() == nil {
		return nil, errors.New("the server returned an empty tree")
	}
	return resp.GetRoot(), nil
}
