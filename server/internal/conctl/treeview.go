package conctl

import (
	"fmt"
	"io"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// treeStyle is the set of connectors a tree is drawn with.
type treeStyle struct {
	branch, last, pipe, blank string
}

var (
	boxTree   = treeStyle{branch: "├── ", last: "└── ", pipe: "│   ", blank: "    "}
	asciiTree = treeStyle{branch: "|-- ", last: "`-- ", pipe: "|   ", blank: "    "}
)

func treeStyleFor(ascii bool) treeStyle {
	if ascii {
		return asciiTree
	}
	return boxTree
}

// culpritMark follows the name of a resource on the path from the root to
// a culprit, and culpritLegend explains it under any table that uses it.
const (
	culpritMark   = " *"
	culpritLegend = "* on the path to a culprit"
)

// treeView is what writeTree drew beyond the rows.
type treeView struct {
	marked  bool // some node is on a culprit path
	trimmed bool // some children were left out
}

// writeTree draws root and its descendants as a table: the tree of names,
// each node's phase and its message. Names are relative to namespace ns.
func writeTree(w io.Writer, root *convergev1.TreeNode, ns string, style treeStyle) (treeView, error) {
	var view treeView
	t := newTable(w, "RESOURCE", "PHASE", "MESSAGE")
	var walk func(n *convergev1.TreeNode, lead, connector, indent string)
	walk = func(n *convergev1.TreeNode, lead, connector, indent string) {
		name := lead + connector + refName(n.GetResource(), ns)
		if n.GetOnCulpritPath() {
			name += culpritMark
			view.marked = true
		}
		t.row(name, n.GetPhase(), truncate(nodeMessage(n), maxMessageWidth))
		children, more := n.GetChildren(), n.GetMoreChildren()
		for i, c := range children {
			if i == len(children)-1 && more <= 0 {
				walk(c, lead+indent, style.last, style.blank)
			} else {
				walk(c, lead+indent, style.branch, style.pipe)
			}
		}
		if more > 0 {
			view.trimmed = true
			note := fmt.Sprintf("... and %d more", more)
			if len(children) == 0 {
				note = fmt.Sprintf("... %d not shown", more)
			}
			t.blankRow(lead+indent+style.last+note, "", "")
		}
	}
	walk(root, "", "", "")
	return view, t.flush()
}

// nodeMessage explains a node: its failure or waiting message, else for a
// composite how many of its children are ready.
func nodeMessage(n *convergev1.TreeNode) string {
	return or(n.GetMessage(), rollupMessage(n.GetRollup()))
}
