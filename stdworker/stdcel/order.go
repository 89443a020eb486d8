package stdcel

import (
	"slices"
	"strings"
)

// cycles reports every cycle the resources' references form, once each,
// at the first resource on it, like `db -> app -> db`.
func (c *checker) cycles(g *Graph) {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	seen := map[string]bool{}
	var stack []string
	var visit func(id string)
	visit = func(id string) {
		color[id] = grey
		stack = append(stack, id)
		for _, d := range g.byID[id].deps {
			if g.byID[d] == nil {
				continue
			}
			switch color[d] {
			case white:
				visit(d)
			case grey:
				at := slices.Index(stack, d)
				cyc := slices.Clone(stack[at:])
				key := slices.Clone(cyc)
				slices.Sort(key)
				if k := strings.Join(key, ","); !seen[k] {
					seen[k] = true
					c.reportCycle(g, cyc)
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = black
	}
	for _, n := range g.nodes {
		if color[n.id] == white {
			visit(n.id)
		}
	}
}

func (c *checker) reportCycle(g *Graph, cyc []string) {
	first := g.byID[cyc[0]]
	if len(cyc) == 1 {
		c.ps.add(first.path+".template.spec", "resource %q reads its own status or spec; a resource cannot depend on itself", first.id)
		return
	}
	// Start the cycle at the resource listed first in the graph.
	start := 0
	for i, id := range cyc {
		if g.byID[id].index < g.byID[cyc[start]].index {
			start = i
		}
	}
	cyc = append(cyc[start:], cyc[:start]...)
	c.ps.add(g.byID[cyc[0]].path+".template.spec", "the references form a cycle: %s -> %s (each reads the next)",
		strings.Join(cyc, " -> "), cyc[0])
}

// topoOrder orders nodes so each comes after what it reads, keeping the
// graph's order otherwise. The graph has no cycle.
func topoOrder(nodes []*node, byID map[string]*node) []*node {
	done := map[string]bool{}
	out := make([]*node, 0, len(nodes))
	for len(out) < len(nodes) {
		progressed := false
		for _, n := range nodes {
			if done[n.id] {
				continue
			}
			ready := true
			for _, d := range n.deps {
				if byID[d] != nil && !done[d] {
					ready = false
					break
				}
			}
			if ready {
				done[n.id] = true
				out = append(out, n)
				progressed = true
			}
		}
		if !progressed {
			return nodes
		}
	}
	return out
}
