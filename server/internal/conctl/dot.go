package conctl

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// dotColors is how a phase is drawn: a light fill and a darker line.
type dotColors struct{ fill, line string }

var (
	phaseColors = map[string]dotColors{
		client.PhaseReady:       {fill: "#d4edda", line: "#2e7d32"},
		client.PhaseReconciling: {fill: "#dbe9f6", line: "#1565c0"},
		client.PhaseDegraded:    {fill: "#fff3cd", line: "#b26a00"},
		client.PhaseFailed:      {fill: "#f8d7da", line: "#c62828"},
		client.PhaseDeleting:    {fill: "#e2e3e5", line: "#616161"},
		client.PhaseOrphaned:    {fill: "#f1f1f1", line: "#9e9e9e"},
		client.PhaseQuarantined: {fill: "#e8daef", line: "#6a1b9a"},
	}
	unknownPhaseColors = dotColors{fill: "#ffffff", line: "#757575"}
)

// The culprit path is drawn over the phase colours, thick and red.
const (
	culpritLine  = "#b71c1c"
	culpritWidth = 3
)

// maxTooltip keeps messages in tooltips to a readable size.
const maxTooltip = 500

func colorsOf(phase string) dotColors {
	if c, ok := phaseColors[phase]; ok {
		return c
	}
	return unknownPhaseColors
}

// writeDOT writes g as a Graphviz digraph. The composite (the first node)
// is a cluster around its children; external references sit outside it.
// Edges point from dependent to dependency, so dependencies are drawn above
// what depends on them; edges still holding their dependent are dashed.
func writeDOT(w io.Writer, g *convergev1.GetResourceGraphResponse, ref resourceRef) error {
	ns := ref.namespace
	onPath := culpritPath(g, ns)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "digraph %s {\n", dotQuote(ref.String()))
	fmt.Fprintln(bw, "  rankdir=BT;")
	fmt.Fprintln(bw, `  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];`)
	fmt.Fprintln(bw, `  edge [fontname="Helvetica", fontsize=9, color="#555555"];`)

	nodes := g.GetNodes()
	var inside, outside []*convergev1.GraphNode
	for _, n := range nodes[min(1, len(nodes)):] {
		if n.GetExternal() {
			outside = append(outside, n)
		} else {
			inside = append(inside, n)
		}
	}
	if len(nodes) > 0 {
		c := nodes[0]
		label := []string{refName(c.GetResource(), ns), c.GetPhase()}
		if more := g.GetMoreNodes(); more > 0 {
			label = append(label, fmt.Sprintf("(%d more not shown)", more))
		}
		attrs := append([]string{"label=" + dotLabel(label...), "labelloc=t", "style=rounded", `fontname="Helvetica"`},
			dotLook(c, onPath[refID(c.GetResource(), ns)], false)...)
		fmt.Fprintln(bw, "  subgraph cluster_composite {")
		for _, a := range attrs {
			fmt.Fprintf(bw, "    %s;\n", a)
		}
		for _, n := range inside {
			writeDOTNode(bw, "    ", n, ns, onPath)
		}
		fmt.Fprintln(bw, "  }")
	}
	for _, n := range outside {
		writeDOTNode(bw, "  ", n, ns, onPath)
	}
	for _, e := range g.GetEdges() {
		var flows []string
		for _, f := range e.GetFlows() {
			flows = append(flows, flowText(f, " → "))
		}
		attrs := []string{"label=" + dotLabel(flows...)}
		if !e.GetSatisfied() {
			attrs = append(attrs, "style=dashed", "tooltip="+dotQuote("dependency not synced"))
		}
		fmt.Fprintf(bw, "  %s -> %s [%s];\n", dotQuote(refID(e.GetDependent(), ns)), dotQuote(refID(e.GetDependency(), ns)), strings.Join(attrs, ", "))
	}
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}

func writeDOTNode(w io.Writer, indent string, n *convergev1.GraphNode, ns string, onPath map[string]bool) {
	id := refID(n.GetResource(), ns)
	label := []string{refName(n.GetResource(), ns), n.GetPhase()}
	style := "rounded,filled"
	if n.GetExternal() {
		label = append(label, "(external)")
		style += ",dashed"
	}
	attrs := append([]string{"label=" + dotLabel(label...), "style=" + dotQuote(style)}, dotLook(n, onPath[id], true)...)
	fmt.Fprintf(w, "%s%s [%s];\n", indent, dotQuote(id), strings.Join(attrs, ", "))
}

// dotLook is the attributes that show a node's phase, whether it is on the
// culprit path and, as a tooltip, its message.
func dotLook(n *convergev1.GraphNode, onPath, filled bool) []string {
	colors := colorsOf(n.GetPhase())
	var attrs []string
	if filled {
		attrs = append(attrs, "fillcolor="+dotQuote(colors.fill))
	}
	if onPath {
		attrs = append(attrs, "color="+dotQuote(culpritLine), fmt.Sprintf("penwidth=%d", culpritWidth))
	} else {
		attrs = append(attrs, "color="+dotQuote(colors.line))
	}
	if m := n.GetMessage(); m != "" {
		attrs = append(attrs, "tooltip="+dotQuote(truncate(m, maxTooltip)))
	}
	return attrs
}

// dotQuote makes s one quoted DOT string on one line.
func dotQuote(s string) string {
	return `"` + dotEscaper.Replace(s) + `"`
}

// dotLabel is a quoted label with one line per part; empty parts are left
// out.
func dotLabel(parts ...string) string {
	var lines []string
	for _, p := range parts {
		if p != "" {
			lines = append(lines, dotEscaper.Replace(p))
		}
	}
	return `"` + strings.Join(lines, `\n`) + `"`
}

// dotEscaper escapes what a quoted DOT string cannot hold as is. A
// backslash is doubled because labels give "\n", "\N" and friends meaning.
var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "", "\t", " ")
