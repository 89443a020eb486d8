package conctl_test

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The fake's tree and graph endpoints hold whole trees and graphs and cut
// them to each request the way the server does, so tests can check what
// conctl asks for as well as how it draws the answer.

// GetResourceTree returns the stored tree, depth levels deep with at most
// children_per_node children per node; the rest are counted.
func (f *fakeControl) GetResourceTree(_ context.Context, req *convergev1.GetResourceTreeRequest) (*convergev1.GetResourceTreeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.treeReqs = append(f.treeReqs, proto.CloneOf(req))
	root, ok := f.trees[rkey(req.Namespace, req.Kind, req.Name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s/%s/%s not found", req.Namespace, req.Kind, req.Name))
	}
	depth, per := int(req.Depth), int(req.ChildrenPerNode)
	if depth == 0 {
		depth = 3
	}
	if per == 0 {
		per = 100
	}
	return &convergev1.GetResourceTreeResponse{Root: cutTree(root, depth, per)}, nil
}

func cutTree(n *convergev1.TreeNode, depth, per int) *convergev1.TreeNode {
	out := proto.CloneOf(n)
	out.Children = nil
	if depth == 0 {
		out.MoreChildren += int32(len(n.Children))
		return out
	}
	for i, c := range n.Children {
		if i == per {
			out.MoreChildren += int32(len(n.Children) - per)
			break
		}
		out.Children = append(out.Children, cutTree(c, depth-1, per))
	}
	return out
}

// GetResourceGraph returns the stored graph with at most max_nodes nodes
// and the edges among the nodes kept.
func (f *fakeControl) GetResourceGraph(_ context.Context, req *convergev1.GetResourceGraphRequest) (*convergev1.GetResourceGraphResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.graphReqs = append(f.graphReqs, proto.CloneOf(req))
	g, ok := f.graphs[rkey(req.Namespace, req.Kind, req.Name)]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s/%s/%s not found", req.Namespace, req.Kind, req.Name))
	}
	out := proto.CloneOf(g)
	limit := int(req.MaxNodes)
	if limit == 0 {
		limit = 1000
	}
	if len(out.Nodes) <= limit {
		return out, nil
	}
	out.MoreNodes += int32(len(out.Nodes) - limit)
	out.Nodes = out.Nodes[:limit]
	kept := map[string]bool{}
	for _, n := range out.Nodes {
		kept[n.Resource.Kind+"/"+n.Resource.Name] = true
	}
	var edges []*convergev1.GraphEdge
	for _, e := range out.Edges {
		if kept[e.Dependent.Kind+"/"+e.Dependent.Name] && kept[e.Dependency.Kind+"/"+e.Dependency.Name] {
			edges = append(edges, e)
		}
	}
	out.Edges = edges
	return out, nil
}
