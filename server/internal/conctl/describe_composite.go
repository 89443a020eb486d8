package conctl

import (
	"fmt"
	"io"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// describeOwner names the composite that owns r and, when it is another
// one, the root of r's tree.
func describeOwner(w io.Writer, r *convergev1.Resource) {
	owner := r.GetOwner()
	if owner == nil {
		return
	}
	ns := r.GetNamespace()
	field(w, "", "Owner", refName(owner, ns))
	if root := r.GetRoot(); root != nil && refID(root, ns) != refID(owner, ns) {
		field(w, "", "Root", refName(root, ns))
	}
}

// describeRollup counts a composite's children by phase and lists the
// culprits that keep it from being Ready.
func describeRollup(w io.Writer, d *described) error {
	r := d.res.GetRollup()
	if r == nil {
		return nil
	}
	field(w, "", "Rollup", rollupSummary(r))
	if len(r.GetCulprits()) == 0 {
		field(w, "", "Culprits", "")
		return nil
	}
	fmt.Fprintln(w, "Culprits:")
	return writeCulprits(w, r.GetCulprits(), d.res.GetNamespace())
}

// hintTreeChildren is the --children describe suggests for a fuller tree:
// more than it shows, still short of a flood.
const hintTreeChildren = 100

// describeTree draws a composite's descendants.
func describeTree(w io.Writer, d *described) error {
	switch {
	case d.res.GetRollup() == nil:
		return nil
	case d.treeErr != nil:
		field(w, "", "Tree", "could not be shown: "+message(d.treeErr))
		return nil
	}
	fmt.Fprintln(w, "Tree:")
	iw := indented(w)
	r := d.res
	view, err := writeTree(iw, d.tree, r.GetNamespace(), d.treeStyle)
	if err != nil {
		return err
	}
	if view.marked {
		fmt.Fprintln(iw, culpritLegend)
	}
	if view.trimmed {
		nsFlag := ""
		if r.GetNamespace() != client.DefaultNamespace {
			nsFlag = " -n " + r.GetNamespace()
		}
		fmt.Fprintf(iw, "Not every descendant is shown; for more: conctl tree %s/%s%s --depth %d --children %d\n",
			r.GetKind(), r.GetName(), nsFlag, maxTreeDepth, hintTreeChildren)
	}
	return nil
}
