package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/graph"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// Plan actions on a child.
const (
	planCreate    = "create"
	planUpdate    = "update"
	planUnchanged = "unchanged"
	planPrune     = "prune"
	planOrphan    = "orphan"
)

// comparePlan turns a composite's preview answer into its plan: each
// child the composer wants against the one it has, the values that would
// flow into it from the current statuses (the dependency gate, run as it
// would run on the applied composition), and the edges added and removed.
// The decisions follow store.ApplyComposition: a child is written when its
// kind version, labels or spec differ; an unwanted child is orphaned for
// the kind's grace, or pruned at once without one.
func (s *Service) comparePlan(ctx context.Context, ps *planSubject) (*convergev1.CompositePlan, error) {
	sub := ps.subject
	cp := &convergev1.CompositePlan{
		Composite:   &convergev1.ResourceRef{Namespace: ps.key.Namespace, Kind: ps.key.Kind, Name: ps.key.Name},
		KindVersion: sub.Version, Reaction: ps.reaction, NotPreviewed: ps.notPreviewed,
	}
	if ps.notPreviewed != "" {
		return cp, nil
	}
	cp.Composer = "worker " + ps.answer.Worker
	if ps.answer.Error != "" {
		cp.NotPreviewed = ps.answer.Error
		return cp, nil
	}
	res := &convergev1.TaskResult{}
	if err := proto.Unmarshal(ps.answer.Result, res); err != nil {
		cp.NotPreviewed = fmt.Sprintf("the preview's answer cannot be read: %v", err)
		return cp, nil
	}
	if f := res.GetError(); f != nil {
		kind := "transient"
		if f.GetTerminal() {
			kind = "terminal"
		}
		cp.NotPreviewed = fmt.Sprintf("the composer failed (%s): %s", kind, f.GetMessage())
		return cp, nil
	}
	ok := res.GetSuccess()
	if len(ok.GetStatus()) > 0 {
		cp.Status = toStruct(orEmptyObject(ok.GetStatus()))
	}
	comp := ok.GetComposition()
	if comp == nil {
		// No composition: the children stay as they are.
		for _, c := range sub.Children {
			cp.Children = append(cp.Children, &convergev1.PlannedChild{Kind: c.Kind, KindVersion: c.Version, Name: c.Name,
				Action: planUnchanged, SpecBefore: toStruct(orEmptyObject(c.Spec)), SpecAfter: toStruct(orEmptyObject(c.Spec))})
		}
		return cp, nil
	}
	current := map[[2]string]store.PlanChild{}
	for _, c := range sub.Children {
		current[[2]string{c.Kind, c.Name}] = c
	}
	refs, err := s.planReferences(ctx, ps.key.Namespace, comp)
	if err != nil {
		return nil, err
	}
	wanted := map[[2]string]bool{}
	// Which children change: a dependent of a changed child waits for it.
	changes := map[[2]string]bool{}
	for _, ch := range comp.GetChildren() {
		k := [2]string{ch.GetKind(), ch.GetName()}
		cur, has := current[k]
		if !has || cur.Deleting || cur.Version != ch.GetKindVersion() || !sameJSONDoc(desiredOf(cur), ch.GetSpec()) {
			changes[k] = true
		}
	}
	deps := map[[2]string][]*convergev1.Edge{}
	for _, e := range comp.GetEdges() {
		k := [2]string{e.GetDependent().GetKind(), e.GetDependent().GetName()}
		deps[k] = append(deps[k], e)
	}
	for _, ch := range comp.GetChildren() {
		k := [2]string{ch.GetKind(), ch.GetName()}
		wanted[k] = true
		desired := orEmptyObject(ch.GetSpec())
		pc := &convergev1.PlannedChild{Kind: ch.GetKind(), KindVersion: ch.GetKindVersion(), Name: ch.GetName()}
		after := desired
		if edges := deps[k]; len(edges) > 0 {
			in := store.GateInput{Kind: ch.GetKind(), Version: ch.GetKindVersion(), Name: ch.GetName(), Spec: desired}
			for _, e := range edges {
				in.Deps = append(in.Deps, gateDep(e, ps.key.Namespace, current, changes, refs))
			}
			dec := graph.Decide(s.flows, s.kinds, in)
			if dec.Waiting != "" {
				pc.Waiting = dec.Waiting
			} else {
				after = dec.Spec
			}
		}
		cur, has := current[k]
		switch {
		case !has || cur.Deleting:
			pc.Action = planCreate
		case cur.Orphaned || cur.Version != ch.GetKindVersion() || !sameLabels(ch.GetLabels(), cur) ||
			(pc.Waiting == "" && !sameJSONDoc(cur.Spec, after)) || (pc.Waiting != "" && !sameJSONDoc(desiredOf(cur), desired)):
			pc.Action = planUpdate
			pc.SpecBefore = toStruct(orEmptyObject(cur.Spec))
		default:
			pc.Action = planUnchanged
			pc.SpecBefore = toStruct(orEmptyObject(cur.Spec))
		}
		pc.SpecAfter = toStruct(orEmptyObject(after))
		cp.Children = append(cp.Children, pc)
	}
	for _, c := range sub.Children {
		k := [2]string{c.Kind, c.Name}
		if wanted[k] || c.Deleting || c.Orphaned {
			continue
		}
		action := planPrune
		if ps.grace > 0 {
			action = planOrphan
		}
		cp.Children = append(cp.Children, &convergev1.PlannedChild{Kind: c.Kind, KindVersion: c.Version, Name: c.Name,
			Action: action, SpecBefore: toStruct(orEmptyObject(c.Spec))})
	}
	cp.EdgesAdded, cp.EdgesRemoved = edgeChanges(ps.key.Namespace, sub.Edges, comp.GetEdges())
	return cp, nil
}

// gateDep is what the gate would find of a dependency once the
// composition applied: a child that is created or changed by it has not
// synced yet, so it blocks; others are read as they are now.
func gateDep(e *convergev1.Edge, ns string, current map[[2]string]store.PlanChild, changes map[[2]string]bool, refs map[store.Ref]store.PlanEdge) store.GateDep {
	flows := make([]flow.Spec, 0, len(e.GetFlows()))
	for _, f := range e.GetFlows() {
		flows = append(flows, flow.Spec{From: f.GetFrom(), Expr: f.GetExpr(), To: f.GetTo()})
	}
	raw, _ := json.Marshal(flows)
	d := e.GetDependency()
	dep := store.GateDep{Ref: store.Ref{Namespace: d.GetNamespace(), Kind: d.GetKind(), Name: d.GetName()}, Flows: raw}
	k := [2]string{d.GetKind(), d.GetName()}
	if c, isChild := current[k]; isChild && (d.GetNamespace() == "" || d.GetNamespace() == ns) {
		dep.Phase, dep.Blocks, dep.Deleting, dep.Status, dep.Spec = c.Phase, c.Blocks || changes[k], c.Deleting, c.Status, c.Spec
		return dep
	}
	if changes[k] {
		dep.Phase, dep.Blocks = "not created yet", true
		return dep
	}
	if dep.Ref.Namespace == "" {
		dep.Ref.Namespace = ns
	}
	r, ok := refs[dep.Ref]
	if !ok {
		dep.Phase, dep.Blocks = "missing", true
		return dep
	}
	dep.Phase, dep.Blocks, dep.Deleting, dep.Status, dep.Spec = r.Phase, r.Blocks, r.Deleting, r.Status, r.DepSpec
	return dep
}

// planReferences reads the outside resources a composition declares.
func (s *Service) planReferences(ctx context.Context, ns string, comp *convergev1.Composition) (map[store.Ref]store.PlanEdge, error) {
	var refs []store.Ref
	for _, r := range comp.GetReferences() {
		ref := store.Ref{Namespace: r.GetNamespace(), Kind: r.GetKind(), Name: r.GetName()}
		if ref.Namespace == "" {
			ref.Namespace = ns
		}
		refs = append(refs, ref)
	}
	return s.store.ReadReferences(ctx, refs)
}

// edgeChanges compares the composite's edges with the composition's, by
// dependent and dependency.
func edgeChanges(ns string, now []store.PlanEdge, next []*convergev1.Edge) (added, removed []*convergev1.PlannedEdge) {
	key := func(dependent, dependency store.Ref) string {
		return dependent.Kind + "/" + dependent.Name + " " + dependency.Namespace + "/" + dependency.Kind + "/" + dependency.Name
	}
	have := map[string]bool{}
	for _, e := range now {
		have[key(e.Dependent, e.Dependency)] = true
	}
	want := map[string]bool{}
	for _, e := range next {
		d := e.GetDependency()
		dep := store.Ref{Namespace: d.GetNamespace(), Kind: d.GetKind(), Name: d.GetName()}
		if dep.Namespace == ns {
			dep.Namespace = ""
		}
		k := key(store.Ref{Kind: e.GetDependent().GetKind(), Name: e.GetDependent().GetName()}, dep)
		if want[k] {
			continue
		}
		want[k] = true
		if !have[k] {
			added = append(added, plannedEdge(ns, store.Ref{Kind: e.GetDependent().GetKind(), Name: e.GetDependent().GetName()}, dep))
		}
	}
	for _, e := range now {
		if !want[key(e.Dependent, e.Dependency)] {
			removed = append(removed, plannedEdge(ns, e.Dependent, e.Dependency))
		}
	}
	sort.Slice(added, func(i, j int) bool { return edgeName(added[i]) < edgeName(added[j]) })
	sort.Slice(removed, func(i, j int) bool { return edgeName(removed[i]) < edgeName(removed[j]) })
	return added, removed
}

func plannedEdge(ns string, dependent, dependency store.Ref) *convergev1.PlannedEdge {
	if dependency.Namespace == "" {
		dependency.Namespace = ns
	}
	return &convergev1.PlannedEdge{
		Dependent:  &convergev1.ResourceRef{Namespace: ns, Kind: dependent.Kind, Name: dependent.Name},
		Dependency: &convergev1.ResourceRef{Namespace: dependency.Namespace, Kind: dependency.Kind, Name: dependency.Name},
	}
}

func edgeName(e *convergev1.PlannedEdge) string {
	return e.GetDependent().GetKind() + "/" + e.GetDependent().GetName() + " " + e.GetDependency().GetKind() + "/" + e.GetDependency().GetName()
}

func totalsOf(plans []*convergev1.CompositePlan) *convergev1.PlanTotals {
	t := &convergev1.PlanTotals{Composites: int32(len(plans))}
	for _, p := range plans {
		if p.GetNotPreviewed() != "" {
			t.NotPreviewed++
		}
		t.EdgesAdded += int32(len(p.GetEdgesAdded()))
		t.EdgesRemoved += int32(len(p.GetEdgesRemoved()))
		for _, c := range p.GetChildren() {
			switch c.GetAction() {
			case planCreate:
				t.Create++
			case planUpdate:
				t.Update++
			case planUnchanged:
				t.Unchanged++
			case planPrune:
				t.Prune++
			case planOrphan:
				t.Orphan++
			}
		}
	}
	return t
}

// desiredOf is what a child was last asked for: its desired spec while
// the gate holds it, else its spec.
func desiredOf(c store.PlanChild) []byte {
	if c.DesiredSpec != nil {
		return c.DesiredSpec
	}
	return c.Spec
}

func sameLabels(want map[string]string, c store.PlanChild) bool {
	raw := []byte("{}")
	if len(want) > 0 {
		raw, _ = json.Marshal(want)
	}
	return sameJSONDoc(raw, c.Labels)
}

// sameJSONDoc compares two JSON documents by value; empty is {}.
func sameJSONDoc(a, b []byte) bool {
	x, errA := schema.Decode(orEmptyObject(a))
	y, errB := schema.Decode(orEmptyObject(b))
	return errA == nil && errB == nil && reflect.DeepEqual(x, y)
}

func orEmptyObject(b []byte) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}")
	}
	return b
}
