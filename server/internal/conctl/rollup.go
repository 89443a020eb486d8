package conctl

import (
	"fmt"
	"io"
	"strings"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// rollupSummary counts a composite's live children by phase, e.g.
// "3/5 ready, 1 reconciling, 1 failed".
func rollupSummary(r *convergev1.Rollup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%d ready", r.GetReady(), r.GetTotal())
	for _, c := range []struct {
		n    int32
		what string
	}{
		{r.GetReconciling(), "reconciling"},
		{r.GetDegraded(), "degraded"},
		{r.GetFailed(), "failed"},
		{r.GetDeleting(), "deleting"},
	} {
		if c.n > 0 {
			fmt.Fprintf(&b, ", %d %s", c.n, c.what)
		}
	}
	if n := r.GetExcluded(); n > 0 {
		fmt.Fprintf(&b, " (%d orphaned or quarantined, not counted)", n)
	}
	return b.String()
}

// rollupMessage explains a composite by its children when nothing else
// does: how many are ready, by phase. tree shows it for a node and list for
// a resource, so both say the same; the culprits behind the counts come
// from the server, in the composite's Ready condition (list, get) or as
// the rows of the tree.
func rollupMessage(r *convergev1.Rollup) string {
	if r.GetTotal() == 0 {
		return ""
	}
	return rollupSummary(r)
}

// writeCulprits writes a table of culprits, indented, naming resources
// relative to namespace ns. VIA is the chain of composites between the one
// described and the culprit.
func writeCulprits(w io.Writer, culprits []*convergev1.Culprit, ns string) error {
	t := newTable(indented(w), "RESOURCE", "PHASE", "VIA", "MESSAGE")
	for _, c := range culprits {
		t.row(refName(c.GetResource(), ns), c.GetPhase(), culpritVia(c, ns), truncate(c.GetMessage(), maxMessageWidth))
	}
	return t.flush()
}

func culpritVia(c *convergev1.Culprit, ns string) string {
	via := make([]string, len(c.GetPath()))
	for i, p := range c.GetPath() {
		via[i] = refName(p, ns)
	}
	return strings.Join(via, " > ")
}
