package conctl

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Limits of a graph request, as the API defines them.
const (
	maxGraphNodes     = 10000
	defaultGraphNodes = 1000
)

type graphFlags struct {
	maxNodes int
}

func (a *app) graphCmd() *cobra.Command {
	var fl graphFlags
	cmd := &cobra.Command{
		Use:   "graph KIND/NAME",
		Short: "Show a composite's children and the dependencies among them, with value flows",
		Long: `Graph shows one level of a composite: the composite itself, its children
and any resources outside it that they declare a reference to (marked
"external"), each with its phase; then every dependency edge as

  dependent -> dependency  [from /status/pointer -> /spec/pointer]

with the values that flow along it. A dependent is not scheduled until its
dependency is synced; edges still holding their dependent say so. Resources
on the path to a culprit are marked with "*", and the culprits are listed.

-o json and -o yaml print the graph as the API returns it; -o dot prints it
in Graphviz DOT, coloured by phase with the culprit path drawn in bold red:
pipe it to "dot -Tsvg" for a picture.`,
		Example: `  conctl graph landingzone/acme
  conctl graph landingzone/acme -o dot | dot -Tsvg > acme.svg
  conctl graph landingzone/acme --max-nodes 5000 -o json`,
		Args: exactArgs(1, "KIND/NAME, e.g. landingzone/acme"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := parseResourceRef(args[0], a.namespace)
			if err != nil {
				return err
			}
			if fl.maxNodes < 1 || fl.maxNodes > maxGraphNodes {
				return usagef("--max-nodes: %d is not in 1..%d", fl.maxNodes, maxGraphNodes)
			}
			return a.graph(cmd.Context(), ref, fl)
		},
	}
	cmd.Flags().IntVar(&fl.maxNodes, "max-nodes", defaultGraphNodes, fmt.Sprintf("nodes shown, 1-%d; the rest are counted", maxGraphNodes))
	return withFormats(cmd, formatTable, formatJSON, formatYAML, formatDOT)
}

func (a *app) graph(ctx context.Context, ref resourceRef, fl graphFlags) error {
	cctx, cancel := a.call(ctx)
	defer cancel()
	g, err := a.client.GetResourceGraph(cctx, &convergev1.GetResourceGraphRequest{
		Namespace: ref.namespace, Kind: ref.kind, Name: ref.name, MaxNodes: int32(fl.maxNodes),
	})
	if err != nil {
		return wrapf(err, "graph of %s", ref)
	}
	switch {
	case a.machine():
		return a.printMessages([]proto.Message{g}, true)
	case a.output == formatDOT:
		return writeDOT(a.stdout, g, ref)
	}
	return writeGraph(a.stdout, g, ref.namespace)
}

// writeGraph writes the nodes, edges and culprits of g for people, naming
// resources relative to namespace ns.
func writeGraph(w io.Writer, g *convergev1.GetResourceGraphResponse, ns string) error {
	onPath := culpritPath(g, ns)
	fmt.Fprintln(w, "Nodes:")
	t := newTable(indented(w), "RESOURCE", "PHASE", "MESSAGE")
	for _, n := range g.GetNodes() {
		name := refName(n.GetResource(), ns)
		if n.GetExternal() {
			name += " (external)"
		}
		if onPath[refID(n.GetResource(), ns)] {
			name += culpritMark
		}
		t.row(name, n.GetPhase(), truncate(n.GetMessage(), maxMessageWidth))
	}
	if more := g.GetMoreNodes(); more > 0 {
		t.blankRow(fmt.Sprintf("... and %d more (raise --max-nodes)", more), "", "")
	}
	if err := t.flush(); err != nil {
		return err
	}

	if len(g.GetEdges()) == 0 {
		field(w, "", "Edges", "")
	} else {
		fmt.Fprintln(w, "Edges (dependent -> dependency):")
		for _, e := range g.GetEdges() {
			fmt.Fprintln(w, "  "+edgeLine(e, ns))
		}
	}

	if len(g.GetCulprits()) == 0 {
		field(w, "", "Culprits", "")
		return nil
	}
	fmt.Fprintln(w, "Culprits:")
	if err := writeCulprits(w, g.GetCulprits(), ns); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, culpritLegend)
	return err
}

// edgeLine is "dependent -> dependency  [from /a -> /b; expr E -> /c]",
// with a note when the edge still holds its dependent.
func edgeLine(e *convergev1.GraphEdge, ns string) string {
	line := refName(e.GetDependent(), ns) + " -> " + refName(e.GetDependency(), ns)
	if flows := e.GetFlows(); len(flows) > 0 {
		texts := make([]string, len(flows))
		for i, f := range flows {
			texts[i] = flowText(f, " -> ")
		}
		line += "  [" + strings.Join(texts, "; ") + "]"
	}
	if !e.GetSatisfied() {
		line += "  (dependency not synced)"
	}
	return oneLine.Replace(line)
}

// flowText is one value flow: its source (a status pointer of the
// dependency, or a CEL expression) and the spec pointer it writes.
func flowText(f *convergev1.GraphFlow, arrow string) string {
	var src []string
	if f.GetFrom() != "" {
		src = append(src, "from "+f.GetFrom())
	}
	if f.GetExpr() != "" {
		src = append(src, "expr "+f.GetExpr())
	}
	return strings.Join(src, " ") + arrow + f.GetTo()
}

// culpritPath is the set of graph resources (by refID) on the path from the
// composite to a culprit: each culprit among its children, and the child
// each deeper culprit is reached through. As in a tree, the composite
// itself is not marked: it is the one the culprits belong to.
func culpritPath(g *convergev1.GetResourceGraphResponse, ns string) map[string]bool {
	on := map[string]bool{}
	for _, c := range g.GetCulprits() {
		on[refID(c.GetResource(), ns)] = true
		if path := c.GetPath(); len(path) > 0 {
			on[refID(path[0], ns)] = true
		}
	}
	return on
}
