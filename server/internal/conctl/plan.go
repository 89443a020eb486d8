package conctl

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
	"github.com/convergehq/converge/server/internal/conctl/unidiff"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/stdworker/stdcel"
)

type planFlags struct {
	files    []string
	starlark string
	main     string
}

func (a *app) planCmd() *cobra.Command {
	var fl planFlags
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR [-f ...] [--starlark DIR [--main FILE]]",
		Short: "Show what applying files would do, down to the children composites would make",
		Long: `Plan shows what conctl apply of the same files would do, and changes nothing.

Every document is sent as a dry run (see --dry-run): the server answers what
it would do, with each resource's spec diff and whether its generation
would bump. Then, for each composite among the resources, plan shows the
children its composer would now produce, against the children it has:
created, updated (with spec diffs, including the values that would flow
along edges from the current statuses), pruned or orphaned, and the edges
added or removed, with totals at the end.

A kind defined by a std.graph on the server is composed here with the
server's graph, exactly as stdworker's stdcel provider composes it. A kind
composed by a stdstarlark bundle is composed with --starlark DIR (the
bundle lives with the workers, so name it). For a composite whose composer
is a worker program, plan says so rather than guessing.`,
		Example: `  conctl plan -f shop.yaml
  conctl plan -f deploy/ --starlark stdworker/examples/stdstarlark/bundle`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.plan(cmd.Context(), fl)
		},
	}
	cmd.Flags().StringArrayVarP(&fl.files, "filename", "f", nil, "file, directory or - (stdin) to plan; repeatable")
	cmd.Flags().StringVar(&fl.starlark, "starlark", "", "a stdstarlark bundle directory composing the resources no graph defines")
	cmd.Flags().StringVar(&fl.main, "main", "", "with --starlark: the bundle's main file (default main.star)")
	return cmd
}

// childPlan is what a composite's composer would now do with one child.
type childPlan struct {
	Ref    string `json:"child"`
	Action string `json:"action"` // create, update, unchanged, prune, orphan
	Diff   string `json:"diff,omitempty"`
	// Waiting says what the child's spec waits for (a value not flowed yet).
	Waiting []string `json:"waiting,omitempty"`
}

// compositePlan is the children of one composite, now and after.
type compositePlan struct {
	Composite string      `json:"composite"`
	Composer  string      `json:"composer"`
	Children  []childPlan `json:"children,omitempty"`
	EdgesAdd  []string    `json:"edges_added,omitempty"`
	EdgesDrop []string    `json:"edges_removed,omitempty"`
	// Unknown says why the children cannot be previewed here.
	Unknown string `json:"unknown,omitempty"`
}

func (a *app) plan(ctx context.Context, fl planFlags) error {
	if len(fl.files) == 0 {
		return usagef("plan needs at least one -f FILE, DIR or - (stdin)")
	}
	if fl.main != "" && fl.starlark == "" {
		return usagef("--main: only with --starlark")
	}
	docs, err := document.Read(fl.files, a.stdin, document.WithDefaultNamespace(a.namespace))
	if err != nil {
		return err
	}
	if len(docs) == 0 {
		return fmt.Errorf("no documents found in the inputs")
	}
	ap, err := planApply(docs)
	if err != nil {
		return err
	}
	a.dryRun = true
	var report []*applied
	if err := a.applyAll(ctx, ap, applyFlags{}, &report); err != nil {
		return err
	}
	pl := &planner{a: a, fl: fl, cache: flow.NewCache(256)}
	var plans []compositePlan
	for _, d := range ap.resources {
		p, err := pl.composite(ctx, d.Message.(*convergev1.ApplyResourceRequest))
		if err != nil {
			return fmt.Errorf("%s: %w", d.Where(), err)
		}
		if p != nil {
			plans = append(plans, *p)
		}
	}
	if a.output != formatTable {
		return a.printValue(map[string]any{"applied": report, "composites": plans})
	}
	printPlans(a.stdout, plans)
	return nil
}

// planner previews composites against the server's current state.
type planner struct {
	a      *app
	fl     planFlags
	cache  *flow.Cache
	graphs map[kindRef]*convergev1.Resource // std.graph resources by the kind they define
	kinds  map[kindRef]*convergev1.KindManifest
}

// kind reads a kind version's manifest once per plan; nil when the server
// has none.
func (p *planner) kind(ctx context.Context, kind string, version int32) (*convergev1.KindManifest, error) {
	ref := kindRef{kind, version}
	if m, ok := p.kinds[ref]; ok {
		return m, nil
	}
	res, err := p.a.client.GetKind(ctx, &convergev1.GetKindRequest{Kind: kind, KindVersion: version})
	if err != nil && connect.CodeOf(err) != connect.CodeNotFound {
		return nil, err
	}
	if p.kinds == nil {
		p.kinds = map[kindRef]*convergev1.KindManifest{}
	}
	p.kinds[ref] = res.GetManifest()
	return p.kinds[ref], nil
}

// composite previews r's children, or returns nil when r's kind does not
// compose.
func (p *planner) composite(ctx context.Context, r *convergev1.ApplyResourceRequest) (*compositePlan, error) {
	id := r.GetNamespace() + "/" + r.GetKind() + "/" + r.GetName()
	kind, err := p.kind(ctx, r.GetKind(), r.GetKindVersion())
	if err != nil {
		return nil, err
	}
	if kind == nil || !composes(kind) {
		return nil, nil // an unknown kind: the dry run said so already
	}
	cp := &compositePlan{Composite: id}
	current, edges, err := p.current(ctx, r)
	if err != nil {
		return nil, err
	}
	observed := map[string]stdcel.Observed{}
	for k, c := range current {
		observed[k] = c
	}
	var next renderedInstance
	g, gname, err := p.graphFor(ctx, r.GetKind(), r.GetKindVersion())
	switch {
	case err != nil:
		return nil, err
	case g != nil:
		cp.Composer = "graph " + gname
		if next, err = composeGraphInstance(p.cache, g, gname, r.GetNamespace(), r.GetName(), r.GetSpec(), observed); err != nil {
			return nil, err
		}
	case p.fl.starlark != "":
		cp.Composer = "starlark bundle " + p.fl.starlark
		d := &document.Document{Source: "plan", Index: 1, Message: r}
		if next, err = renderStarlark(ctx, p.cache, renderFlags{starlark: p.fl.starlark, main: p.fl.main}, d, observed); err != nil {
			return nil, err
		}
	default:
		cp.Composer = "a worker"
		cp.Unknown = fmt.Sprintf("kind %s v%d is composed by a worker program; plan previews std.graph kinds, and Starlark bundles with --starlark",
			r.GetKind(), r.GetKindVersion())
		return cp, nil
	}
	grace := kind.GetPolicy().GetOrphanGraceSeconds()
	wanted := map[string]bool{}
	for _, c := range next.Children {
		key := c.Kind + "/" + c.Name
		wanted[key] = true
		cur, ok := current[key]
		if !ok {
			cp.Children = append(cp.Children, childPlan{Ref: key, Action: "create", Diff: unidiff.Unified("/dev/null", key+" spec (planned)", "", specJSON(c.Spec), diffContext), Waiting: c.Waiting})
			continue
		}
		before, after := specJSON(cur.Spec), specJSON(c.Spec)
		if before == after {
			cp.Children = append(cp.Children, childPlan{Ref: key, Action: "unchanged", Waiting: c.Waiting})
			continue
		}
		cp.Children = append(cp.Children, childPlan{Ref: key, Action: "update", Waiting: c.Waiting,
			Diff: unidiff.Unified(key+" spec (now)", key+" spec (planned)", before, after, diffContext)})
	}
	for _, key := range slices.Sorted(maps.Keys(current)) {
		if !wanted[key] {
			action := "prune"
			if grace > 0 {
				action = "orphan"
			}
			cp.Children = append(cp.Children, childPlan{Ref: key, Action: action})
		}
	}
	nextEdges := map[string]bool{}
	for _, e := range next.Edges {
		nextEdges[e.Dependent+" -> "+e.Dependency] = true
	}
	for _, e := range slices.Sorted(maps.Keys(nextEdges)) {
		if !edges[e] {
			cp.EdgesAdd = append(cp.EdgesAdd, e)
		}
	}
	for _, e := range slices.Sorted(maps.Keys(edges)) {
		if !nextEdges[e] {
			cp.EdgesDrop = append(cp.EdgesDrop, e)
		}
	}
	return cp, nil
}

func composes(m *convergev1.KindManifest) bool {
	for _, r := range m.GetReactions() {
		for _, e := range r.GetEmits() {
			if e == "children" {
				return true
			}
		}
	}
	return false
}

// current reads a composite's children (with the specs and statuses the
// server holds) and edges; none when it does not exist yet.
func (p *planner) current(ctx context.Context, r *convergev1.ApplyResourceRequest) (map[string]stdcel.Observed, map[string]bool, error) {
	children := map[string]stdcel.Observed{}
	edges := map[string]bool{}
	g, err := p.a.client.GetResourceGraph(ctx, &convergev1.GetResourceGraphRequest{Namespace: r.GetNamespace(), Kind: r.GetKind(),
		Name: r.GetName(), MaxNodes: 10000})
	if connect.CodeOf(err) == connect.CodeNotFound {
		return children, edges, nil
	}
	if err != nil {
		return nil, nil, err
	}
	kinds := map[string]bool{}
	for i, n := range g.GetNodes() {
		if i > 0 && !n.GetExternal() {
			kinds[n.GetResource().GetKind()] = true
		}
	}
	for _, e := range g.GetEdges() {
		edges[e.GetDependent().GetKind()+"/"+e.GetDependent().GetName()+" -> "+e.GetDependency().GetKind()+"/"+e.GetDependency().GetName()] = true
	}
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		token := ""
		for {
			res, err := p.a.client.ListResources(ctx, &convergev1.ListResourcesRequest{Namespace: r.GetNamespace(), Kind: kind,
				PageSize: 1000, PageToken: token})
			if err != nil {
				return nil, nil, err
			}
			for _, c := range res.GetResources() {
				if o := c.GetOwner(); o.GetKind() != r.GetKind() || o.GetName() != r.GetName() {
					continue
				}
				spec, err := decodeStruct(c.GetSpec())
				if err != nil {
					return nil, nil, err
				}
				status, err := decodeStruct(c.GetStatus())
				if err != nil {
					return nil, nil, err
				}
				children[c.GetKind()+"/"+c.GetName()] = stdcel.Observed{Spec: spec, Status: status}
			}
			if token = res.GetNextPageToken(); token == "" {
				break
			}
		}
	}
	return children, edges, nil
}

// graphFor finds and checks the server's std.graph that defines a kind
// version; nil when none does.
func (p *planner) graphFor(ctx context.Context, kind string, version int32) (*stdcel.Graph, string, error) {
	if p.graphs == nil {
		p.graphs = map[kindRef]*convergev1.Resource{}
		token := ""
		for {
			res, err := p.a.client.ListResources(ctx, &convergev1.ListResourcesRequest{Kind: graphKind, PageSize: 1000, PageToken: token})
			if err != nil {
				return nil, "", err
			}
			for _, r := range res.GetResources() {
				f := r.GetSpec().GetFields()
				k, v := f["kind"].GetStringValue(), int32(f["version"].GetNumberValue())
				p.graphs[kindRef{k, v}] = r
			}
			if token = res.GetNextPageToken(); token == "" {
				break
			}
		}
	}
	r, ok := p.graphs[kindRef{kind, version}]
	if !ok {
		return nil, "", nil
	}
	gname := r.GetNamespace() + "/" + graphKind + "/" + r.GetName()
	lookup := func(ctx context.Context, kind string, version int) (*stdcel.KindSchemas, error) {
		m, err := p.kind(ctx, kind, int32(version))
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, stdcel.ErrUnknownKind
		}
		return kindSchemas(m), nil
	}
	g, err := compileGraph(ctx, gname, r.GetSpec(), lookup)
	if err != nil {
		return nil, "", err
	}
	return g, gname, nil
}

func printPlans(w io.Writer, plans []compositePlan) {
	counts := map[string]int{}
	for _, p := range plans {
		fmt.Fprintf(w, "composite %s (%s):\n", p.Composite, p.Composer)
		if p.Unknown != "" {
			fmt.Fprintf(w, "  children not previewed: %s\n", p.Unknown)
			counts["unknown"]++
			continue
		}
		for _, c := range p.Children {
			counts[c.Action]++
			if c.Action == "unchanged" {
				continue
			}
			fmt.Fprintf(w, "  %s %s %s\n", planMark[c.Action], c.Action, c.Ref)
			for _, line := range strings.Split(strings.TrimRight(c.Diff, "\n"), "\n") {
				if line != "" {
					fmt.Fprintf(w, "      %s\n", line)
				}
			}
			for _, why := range c.Waiting {
				fmt.Fprintf(w, "      %s\n", why)
			}
		}
		for _, e := range p.EdgesAdd {
			fmt.Fprintf(w, "  + edge %s\n", e)
		}
		for _, e := range p.EdgesDrop {
			fmt.Fprintf(w, "  - edge %s\n", e)
		}
	}
	line := fmt.Sprintf("Plan: %d child(ren) to create, %d to update, %d to prune, %d to orphan, %d unchanged, across %d composite(s)",
		counts["create"], counts["update"], counts["prune"], counts["orphan"], counts["unchanged"], len(plans))
	if n := counts["unknown"]; n > 0 {
		line += fmt.Sprintf("; %d composite(s) not previewed", n)
	}
	fmt.Fprintln(w, line+"; nothing was changed.")
}

var planMark = map[string]string{"create": "+", "update": "~", "prune": "-", "orphan": "-"}
