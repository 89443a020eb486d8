package api

import (
	"context"
	"encoding/json"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
)

// maxCulprits bounds the culprits a rollup names (documented in
// docs/composition.md).
const maxCulprits = 10

// culprits names the deepest descendants keeping a composite from Ready.
func (s *Service) culprits(ctx context.Context, id int64) ([]*convergev1.Culprit, error) {
	cs, err := s.store.Culprits(ctx, id, maxCulprits)
	if err != nil {
		return nil, err
	}
	// A resource waiting for a failed or degraded one is a consequence,
	// not a culprit: when there are failures, name only them.
	if len(cs) > 0 && (cs[0].Phase == "Failed" || cs[0].Phase == "Degraded") {
		kept := cs[:0]
		for _, c := range cs {
			if c.Phase == "Failed" || c.Phase == "Degraded" {
				kept = append(kept, c)
			}
		}
		cs = kept
	}
	out := make([]*convergev1.Culprit, len(cs))
	for i, c := range cs {
		out[i] = &convergev1.Culprit{Resource: toRef(&c.Ref), Phase: c.Phase, Message: c.Message}
		for _, p := range c.Path {
			out[i].Path = append(out[i].Path, toRef(&p))
		}
	}
	return out, nil
}

// GetResourceTree returns a composite and its descendants, level by
// level, not Ready children first.
func (s *Service) GetResourceTree(ctx context.Context, req *convergev1.GetResourceTreeRequest) (*convergev1.GetResourceTreeResponse, error) {
	depth, per := int(req.GetDepth()), int(req.GetChildrenPerNode())
	if depth == 0 {
		depth = 3
	}
	if per == 0 {
		per = 100
	}
	top, err := s.store.NodeByKey(ctx, store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()})
	if err != nil {
		return nil, storeError(err)
	}
	culprits, err := s.culprits(ctx, top.ID)
	if err != nil {
		return nil, storeError(err)
	}
	onPath := map[store.Ref]bool{}
	for _, c := range culprits {
		onPath[fromRef(c.GetResource())] = true
		for _, p := range c.GetPath() {
			onPath[fromRef(p)] = true
		}
	}
	root := treeNode(top, onPath)
	level := map[int64]*convergev1.TreeNode{top.ID: root}
	for d := 0; d < depth && len(level) > 0; d++ {
		ids := make([]int64, 0, len(level))
		for id, n := range level {
			if n.MoreChildren > 0 {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			break
		}
		children, err := s.store.ChildrenOf(ctx, ids, per)
		if err != nil {
			return nil, storeError(err)
		}
		next := map[int64]*convergev1.TreeNode{}
		for _, c := range children {
			parent := level[*c.OwnerID]
			n := treeNode(c, onPath)
			parent.Children = append(parent.Children, n)
			parent.MoreChildren--
			next[c.ID] = n
		}
		level = next
	}
	return &convergev1.GetResourceTreeResponse{Root: root}, nil
}

func treeNode(n store.Node, onPath map[store.Ref]bool) *convergev1.TreeNode {
	return &convergev1.TreeNode{
		Resource: toRef(&n.Ref), KindVersion: n.KindVersion, Phase: n.Phase, Message: n.Message,
		OnCulpritPath: onPath[n.Ref], Rollup: rollupOrNil(n.Rollup), MoreChildren: int32(n.Children),
	}
}

func rollupOrNil(raw []byte) *convergev1.Rollup {
	if len(raw) == 0 {
		return nil
	}
	return toRollup(raw)
}

func fromRef(r *convergev1.ResourceRef) store.Ref {
	return store.Ref{Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName()}
}

// GetResourceGraph returns a composite's children and the edges among
// them, with their flows.
func (s *Service) GetResourceGraph(ctx context.Context, req *convergev1.GetResourceGraphRequest) (*convergev1.GetResourceGraphResponse, error) {
	limit := int(req.GetMaxNodes())
	if limit == 0 {
		limit = 1000
	}
	top, err := s.store.NodeByKey(ctx, store.ResourceKey{Namespace: namespaceOr(req.GetNamespace()), Kind: req.GetKind(), Name: req.GetName()})
	if err != nil {
		return nil, storeError(err)
	}
	nodes, edges, more, err := s.store.Graph(ctx, top.ID, limit)
	if err != nil {
		return nil, storeError(err)
	}
	culprits, err := s.culprits(ctx, top.ID)
	if err != nil {
		return nil, storeError(err)
	}
	out := &convergev1.GetResourceGraphResponse{MoreNodes: int32(more), Culprits: culprits}
	refs := map[int64]*convergev1.ResourceRef{top.ID: toRef(&top.Ref)}
	out.Nodes = append(out.Nodes, &convergev1.GraphNode{Resource: refs[top.ID], KindVersion: top.KindVersion, Phase: top.Phase, Message: top.Message})
	readable := s.readable(ctx)
	for _, n := range nodes {
		refs[n.ID] = toRef(&n.Ref)
		external := n.OwnerID == nil || *n.OwnerID != top.ID
		node := &convergev1.GraphNode{Resource: refs[n.ID], KindVersion: n.KindVersion, Phase: n.Phase,
			Message: n.Message, External: external}
		if external && !readable(n.Ref.Namespace, n.Ref.Kind) {
			// A reference into a namespace the caller may not read: the
			// edge's end is named (the composite declared it), its state
			// is not shown.
			node.KindVersion, node.Phase, node.Message = 0, "", ""
		}
		out.Nodes = append(out.Nodes, node)
	}
	for _, e := range edges {
		a, b := refs[e.Dependent], refs[e.Dependency]
		if a == nil || b == nil {
			continue // beyond max_nodes
		}
		ge := &convergev1.GraphEdge{Dependent: a, Dependency: b, Satisfied: e.Satisfied}
		var flows []struct{ From, Expr, To string }
		_ = json.Unmarshal(e.Flows, &flows)
		for _, f := range flows {
			ge.Flows = append(ge.Flows, &convergev1.GraphFlow{From: f.From, Expr: f.Expr, To: f.To})
		}
		out.Edges = append(out.Edges, ge)
	}
	return out, nil
}
