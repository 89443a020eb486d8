package broker

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/kinds"
	"github.com/convergehq/converge/server/internal/limits"
	"github.com/convergehq/converge/server/internal/storable"
	"github.com/convergehq/converge/server/internal/store"
)

// onChunk buffers one part of a composer's answer under its lease.
func (b *Broker) onChunk(s *session, c *convergev1.ComposeChunk) {
	if b.onPreviewChunk(s, c) {
		return
	}
	pl := c.GetLease()
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.heldBy(s, pl)
	if l == nil {
		return // the result, if it comes, is refused the same way
	}
	if int(c.GetIndex()) != len(l.parts) {
		// A resent answer starts again at 0; anything else is out of order.
		if c.GetIndex() == 0 {
			l.parts, l.partChildren, l.overflow = nil, 0, false
		} else {
			l.overflow = true
			return
		}
	}
	l.partChildren += len(c.GetPart().GetChildren())
	if l.partChildren > limits.MaxChildren {
		l.overflow, l.parts = true, nil
		return
	}
	if !l.overflow {
		l.parts = append(l.parts, c.GetPart())
	}
}

// compositionOf turns a composer's answer into what the store applies,
// after checking it whole: every child's kind and spec, the edges and
// their flows, and that the edges form no cycle. A problem is a terminal
// failure naming the child, edge or cycle.
func (b *Broker) compositionOf(e *kinds.Entry, l *lease, ok *convergev1.Success, base store.Outcome) (store.Composition, string) {
	parts := append(append([]*convergev1.Composition(nil), l.parts...), ok.GetComposition())
	if l.overflow {
		return store.Composition{}, fmt.Sprintf("the composer emitted more than %d children (the limit per composite; docs/limits.md), or sent its parts out of order", limits.MaxChildren)
	}
	if int(ok.GetComposeChunks()) != len(l.parts) {
		return store.Composition{}, fmt.Sprintf("the composition announced %d chunks but %d arrived", ok.GetComposeChunks(), len(l.parts))
	}
	for i, p := range l.parts {
		if path, why := storable.Message(p); why != "" {
			return store.Composition{}, fmt.Sprintf("composition chunk %d cannot be stored: %s: %s", i, path, why)
		}
	}
	c := store.Composition{Outcome: base, OrphanGrace: e.Compiled.Policy.OrphanGrace, Settles: e.SettledReaction()}
	var all []*convergev1.Child
	for _, p := range parts {
		all = append(all, p.GetChildren()...)
	}
	children, index, msg := b.checkChildren(all)
	if msg != "" {
		return c, msg
	}
	c.Children = children
	refs := map[store.Ref]bool{}
	for _, p := range parts {
		for _, r := range p.GetReferences() {
			ref := store.Ref{Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName()}
			if ref.Namespace == "" {
				ref.Namespace = l.namespace
			}
			if !refs[ref] {
				refs[ref] = true
				c.References = append(c.References, ref)
			}
		}
	}
	deps := map[[2]string][][2]string{}
	i := 0
	for _, p := range parts {
		for _, ed := range p.GetEdges() {
			where := fmt.Sprintf("edges[%d] %s/%s -> %s/%s", i, ed.GetDependent().GetKind(), ed.GetDependent().GetName(),
				ed.GetDependency().GetKind(), ed.GetDependency().GetName())
			i++
			from := [2]string{ed.GetDependent().GetKind(), ed.GetDependent().GetName()}
			to := [2]string{ed.GetDependency().GetKind(), ed.GetDependency().GetName()}
			if ns := ed.GetDependent().GetNamespace(); ns != "" && ns != l.namespace {
				// Children live in their composite's namespace (a tenant's
				// composition cannot place anything in another's), so a
				// dependent elsewhere is no child of this one.
				return c, fmt.Sprintf("%s: the dependent names namespace %s, but it must be a child of this composition, and children live in its namespace %s",
					where, ns, l.namespace)
			}
			if _, ok := index[from]; !ok {
				return c, fmt.Sprintf("%s: the dependent is not a child of this composition", where)
			}
			target := store.Ref{Namespace: ed.GetDependency().GetNamespace(), Kind: to[0], Name: to[1]}
			if target.Namespace == "" {
				target.Namespace = l.namespace
			}
			// A dependency in another namespace is a reference even if a
			// child has its kind and name.
			_, isChild := index[to]
			isChild = isChild && target.Namespace == l.namespace
			if !isChild && !refs[target] {
				return c, fmt.Sprintf("%s: the dependency is neither a child of this composition nor a declared reference", where)
			}
			if from == to {
				return c, fmt.Sprintf("%s: a child cannot depend on itself", where)
			}
			var check func(*flow.Program) error
			if isChild {
				check = b.flowSecrecy(c.Children[index[to]], c.Children[index[from]])
			}
			flows, msg := b.compileFlows(where, ed.GetFlows(), check)
			if msg != "" {
				return c, msg
			}
			if isChild {
				// Edges among children name the dependency by kind and
				// name; edges to references carry its namespace.
				deps[from] = append(deps[from], to)
				target.Namespace = ""
			}
			c.Edges = append(c.Edges, store.EdgeSpec{
				Dependent:  store.Ref{Kind: from[0], Name: from[1]},
				Dependency: store.Ref{Namespace: target.Namespace, Kind: to[0], Name: to[1]},
				Flows:      flows,
			})
		}
	}
	if cycle := findCycle(deps); len(cycle) > 0 {
		names := make([]string, len(cycle))
		for i, k := range cycle {
			names[i] = k[0] + "/" + k[1]
		}
		return c, "the edges form a cycle: " + strings.Join(names, " -> ")
	}
	return c, ""
}

// storedFlow is a flow as the edges table keeps it.
type storedFlow struct {
	From string `json:"from,omitempty"`
	Expr string `json:"expr,omitempty"`
	To   string `json:"to"`
}

// compileFlows checks each flow (pointer syntax, CEL compiles, and check
// when set: the secrecy of flows between children) and returns them in
// their stored form.
func (b *Broker) compileFlows(where string, fs []*convergev1.Flow, check func(*flow.Program) error) ([]byte, string) {
	out := make([]storedFlow, 0, len(fs))
	for j, f := range fs {
		p, err := b.flows.Compile(f.GetFrom(), f.GetExpr(), f.GetTo())
		if err != nil {
			return nil, fmt.Sprintf("%s: flows[%d]: %v", where, j, err)
		}
		if check != nil {
			if err := check(p); err != nil {
				return nil, fmt.Sprintf("%s: flows[%d]: %v", where, j, err)
			}
		}
		out = append(out, storedFlow{From: f.GetFrom(), Expr: f.GetExpr(), To: f.GetTo()})
	}
	raw, _ := json.Marshal(out)
	return raw, ""
}

// findCycle returns a cycle in the dependency graph, or nil.
func findCycle(deps map[[2]string][][2]string) [][2]string {
	const (
		unseen = iota
		active
		done
	)
	state := map[[2]string]int{}
	var stack [][2]string
	var found [][2]string
	var visit func(n [2]string) bool
	visit = func(n [2]string) bool {
		state[n] = active
		stack = append(stack, n)
		for _, m := range deps[n] {
			switch state[m] {
			case active:
				for i := len(stack) - 1; i >= 0; i-- {
					if stack[i] == m {
						found = append(append([][2]string(nil), stack[i:]...), m)
						return true
					}
				}
			case unseen:
				if visit(m) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	keys := make([][2]string, 0, len(deps))
	for k := range deps {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+"/"+keys[i][1] < keys[j][0]+"/"+keys[j][1] })
	for _, k := range keys {
		if state[k] == unseen && visit(k) {
			return found
		}
	}
	return nil
}
