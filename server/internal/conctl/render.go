package conctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/converge"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/conctl/document"
	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/stdworker/stdcel"
	"github.com/convergehq/converge/stdworker/stdstarlark"
)

// graphKind is the kind whose resources define graphs (catalog/std/std.graph).
const graphKind = "std.graph"

type renderFlags struct {
	files    []string
	observed string
	starlark string // a stdstarlark bundle directory
	main     string // its main file
}

func (a *app) renderCmd() *cobra.Command {
	var fl renderFlags
	cmd := &cobra.Command{
		Use:   "render -f FILE|DIR [-f ...] [--observed FILE] [--starlark DIR [--main FILE]]",
		Short: "Show what std.graph and Starlark kinds make of their resources, offline, with no server",
		Long: `Render reads std.graph resources, instances of the kinds they define, and the
manifests of the kinds the graphs use, all from files, and prints what each
instance composes to, exactly as stdworker's stdcel provider would: every
child with its spec, the edges with the values that flow along them, the
status the instance would project and what is not ready yet. It talks to no
server; a graph is checked as applying it checks it (expressions against
the schemas of the kinds it reads), so each kind a graph uses needs its
manifest among the files.

--observed FILE gives what the children are as the server would hold them:
a mapping from KIND/NAME to {status: ..., spec: ...}. Values flow from the
observed statuses into their dependents' specs; a dependent whose
dependency is not observed shows what it waits for. Without it every child
is shown as the composer emits it.

--starlark DIR renders the other resources of the files with a stdstarlark
bundle instead (its compose(ctx) in --main, default main.star), as the
stdstarlark provider runs it: the same children, edges and flowed values,
and the status compose returns.`,
		Example: `  conctl render -f webapp-graph.yaml -f kinds/ -f shop.yaml
  conctl render -f stdworker/examples/stdcel --observed observed.yaml -o yaml
  conctl render --starlark stdworker/examples/stdstarlark/bundle -f stdworker/examples/stdstarlark/resources.yaml

  # observed.yaml
  #   demo.database/shop-db:
  #     status: {host: db.internal, port: 5432, ready: true}`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.render(cmd.Context(), fl)
		},
	}
	cmd.Flags().StringArrayVarP(&fl.files, "filename", "f", nil, "file, directory or - (stdin) to read; repeatable")
	cmd.Flags().StringVar(&fl.observed, "observed", "", "file of observed children: KIND/NAME -> {status, spec}")
	cmd.Flags().StringVar(&fl.starlark, "starlark", "", "a stdstarlark bundle directory to render the resources with")
	cmd.Flags().StringVar(&fl.main, "main", "", "with --starlark: the bundle's main file (default main.star)")
	return cmd
}

// renderedInstance is what one instance composes to.
type renderedInstance struct {
	Composer string          `json:"composer"`
	Instance string          `json:"instance"`
	Children []renderedChild `json:"children"`
	Edges    []renderedEdge  `json:"edges,omitempty"`
	Status   map[string]any  `json:"status,omitempty"`
	NotReady []string        `json:"not_ready,omitempty"`
	Problems []string        `json:"status_problems,omitempty"`
	observed map[string]bool // KIND/NAME of the children found in --observed
}

type renderedChild struct {
	Kind        string            `json:"kind"`
	KindVersion int               `json:"kind_version"`
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels,omitempty"`
	Spec        any               `json:"spec"`
	// Waiting says what the child's spec waits for: a flowed value whose
	// dependency is not observed or has no value there yet.
	Waiting []string `json:"waiting,omitempty"`
}

type renderedEdge struct {
	Dependent  string      `json:"dependent"`
	Dependency string      `json:"dependency"`
	Flows      []flow.Spec `json:"flows,omitempty"`
}

func (a *app) render(ctx context.Context, fl renderFlags) error {
	if len(fl.files) == 0 {
		return usagef("render needs at least one -f FILE, DIR or - (stdin)")
	}
	docs, err := document.Read(fl.files, a.stdin, document.WithDefaultNamespace(a.namespace))
	if err != nil {
		return err
	}
	observed := map[string]stdcel.Observed{}
	if fl.observed != "" {
		if observed, err = readObserved(fl.observed, a.stdin); err != nil {
			return err
		}
	}
	manifests := map[kindRef]*convergev1.KindManifest{}
	var graphs, instances []*document.Document
	for _, d := range docs {
		switch m := d.Message.(type) {
		case *convergev1.KindManifest:
			manifests[kindRef{m.GetKind(), m.GetKindVersion()}] = m
		case *convergev1.ApplyResourceRequest:
			if m.GetKind() == graphKind {
				graphs = append(graphs, d)
			} else {
				instances = append(instances, d)
			}
		}
	}
	if fl.main != "" && fl.starlark == "" {
		return usagef("--main: only with --starlark")
	}
	if len(graphs) == 0 && fl.starlark == "" {
		return fmt.Errorf("no %s resource in the inputs: render shows what a graph makes of its instances (or give --starlark DIR)", graphKind)
	}
	var out []renderedInstance
	var errs []error
	defined := map[kindRef]bool{}
	cache := flow.NewCache(256)
	for _, gd := range graphs {
		r, kv, err := renderGraph(ctx, cache, gd, instances, manifests, observed)
		out = append(out, r...)
		defined[kv] = true
		if err != nil {
			errs = append(errs, err)
		}
	}
	if fl.starlark != "" {
		for _, d := range instances {
			m := d.Message.(*convergev1.ApplyResourceRequest)
			if defined[kindRef{m.GetKind(), m.GetKindVersion()}] {
				continue
			}
			r, err := renderStarlark(ctx, cache, fl, d, observed)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, r)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if a.output != formatTable {
		return a.printValue(out)
	}
	for i, r := range out {
		if i > 0 {
			fmt.Fprintln(a.stdout)
		}
		printRendered(a.stdout, r)
	}
	return nil
}

// renderGraph compiles one graph and composes each of its instances.
func renderGraph(ctx context.Context, cache *flow.Cache, gd *document.Document, instances []*document.Document,
	manifests map[kindRef]*convergev1.KindManifest, observed map[string]stdcel.Observed) ([]renderedInstance, kindRef, error) {
	var kv kindRef
	res := gd.Message.(*convergev1.ApplyResourceRequest)
	gname := res.GetNamespace() + "/" + graphKind + "/" + res.GetName()
	lookup := func(_ context.Context, kind string, version int) (*stdcel.KindSchemas, error) {
		m, ok := manifests[kindRef{kind, int32(version)}]
		if !ok {
			return nil, fmt.Errorf("%w: is not among the files; add its manifest with -f", stdcel.ErrUnknownKind)
		}
		return kindSchemas(m), nil
	}
	g, err := compileGraph(ctx, gname, res.GetSpec(), lookup)
	if err != nil {
		return nil, kv, fmt.Errorf("%s: %w", gd.Where(), err)
	}
	kv = kindRef{g.Kind, int32(g.Version)}
	var out []renderedInstance
	for _, d := range instances {
		m := d.Message.(*convergev1.ApplyResourceRequest)
		if m.GetKind() != g.Kind || int(m.GetKindVersion()) != g.Version {
			continue
		}
		r, err := composeGraphInstance(cache, g, gname, m.GetNamespace(), m.GetName(), m.GetSpec(), observed)
		if err != nil {
			return out, kv, fmt.Errorf("%s: %w", d.Where(), err)
		}
		out = append(out, r)
	}
	return out, kv, nil
}

func kindSchemas(m *convergev1.KindManifest) *stdcel.KindSchemas {
	return &stdcel.KindSchemas{Spec: m.GetSpecSchema().AsMap(), Status: m.GetStatusSchema().AsMap()}
}

// compileGraph checks the graph a std.graph resource named gname holds.
func compileGraph(ctx context.Context, gname string, spec *structpb.Struct, lookup stdcel.LookupKind) (*stdcel.Graph, error) {
	raw, err := spec.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", gname, err)
	}
	def, err := stdcel.DecodeDefinition(raw)
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", gname, err)
	}
	g, err := stdcel.Compile(ctx, def, lookup)
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", gname, err)
	}
	return g, nil
}

// composeGraphInstance composes one instance of g with its spec, the
// observed children giving the flowed values and the projected status.
func composeGraphInstance(cache *flow.Cache, g *stdcel.Graph, gname, namespace, name string, spec *structpb.Struct,
	observed map[string]stdcel.Observed) (renderedInstance, error) {
	id := namespace + "/" + g.Kind + "/" + name
	m, err := decodeStruct(spec)
	if err != nil {
		return renderedInstance{}, fmt.Errorf("%s: spec: %w", id, err)
	}
	inst := stdcel.Instance{Namespace: namespace, Name: name, Spec: m}
	plan, err := g.Compose(inst)
	if err != nil {
		return renderedInstance{}, fmt.Errorf("%s: %w", id, err)
	}
	r, seen, err := renderComposed(cache, plan.Children(), plan.Edges, observed)
	if err != nil {
		return r, fmt.Errorf("%s: %w", id, err)
	}
	obs := g.Observe(inst, plan, seen)
	r.Status, r.NotReady, r.Problems = obs.Status, obs.NotReady, obs.Unprojected
	r.Composer, r.Instance = "graph "+gname, id
	return r, nil
}

// renderComposed writes the values that flow from the observed children
// into each child's spec, as the server's dependency gate would. Children
// come dependencies first. It also returns the observed children, with
// the specs the server would hold, for a status projection.
func renderComposed(cache *flow.Cache, children []converge.Child, edges []converge.Edge, observed map[string]stdcel.Observed) (renderedInstance, map[string]stdcel.Observed, error) {
	r := renderedInstance{observed: map[string]bool{}}
	into := map[string][]converge.Edge{}
	for _, e := range edges {
		dep, on := e.Dependent.Kind+"/"+e.Dependent.Name, e.Dependency.Kind+"/"+e.Dependency.Name
		into[dep] = append(into[dep], e)
		re := renderedEdge{Dependent: dep, Dependency: on}
		for _, f := range e.Flows {
			re.Flows = append(re.Flows, flow.Spec{From: f.From, Expr: f.Expr, To: f.To})
		}
		r.Edges = append(r.Edges, re)
	}
	seen := map[string]stdcel.Observed{}
	rendered := map[string]any{} // KIND/NAME -> effective spec; dependencies come first
	for _, c := range children {
		key := c.Kind + "/" + c.Name
		spec, err := jsonValue(c.Spec)
		if err != nil {
			return r, nil, fmt.Errorf("child %s: spec: %w", key, err)
		}
		child := renderedChild{Kind: c.Kind, KindVersion: c.KindVersion, Name: c.Name, Labels: c.Labels}
		var writes []flow.Write
		for _, e := range into[key] {
			on := e.Dependency.Kind + "/" + e.Dependency.Name
			o, ok := observed[on]
			if !ok {
				child.Waiting = append(child.Waiting, fmt.Sprintf("waits for %s: it is not in the observed children", on))
				continue
			}
			specs := make([]flow.Spec, len(e.Flows))
			for i, f := range e.Flows {
				specs[i] = flow.Spec{From: f.From, Expr: f.Expr, To: f.To}
			}
			var depSpec any = o.Spec
			if o.Spec == nil {
				depSpec = rendered[on] // what the server would hold: the rendered spec
			}
			ws, failed, err := flow.EvalAll(cache, specs, orEmpty(o.Status), orEmpty(depSpec))
			switch {
			case errors.Is(err, flow.ErrMissing):
				child.Waiting = append(child.Waiting, fmt.Sprintf("waits for %s: %v", on, err))
			case err != nil:
				child.Waiting = append(child.Waiting, fmt.Sprintf("flow from %s to %s fails: %v", on, failed.To, err))
			}
			writes = append(writes, ws...)
		}
		if effective, _, err := flow.Apply(spec, writes); err == nil {
			spec = effective
		} else {
			child.Waiting = append(child.Waiting, fmt.Sprintf("writing the flowed values fails: %v", err))
		}
		child.Spec = spec
		rendered[key] = spec
		if o, ok := observed[key]; ok {
			m, _ := spec.(map[string]any)
			seen[key] = stdcel.Observed{Spec: m, Status: o.Status}
			r.observed[key] = true
		}
		r.Children = append(r.Children, child)
	}
	return r, seen, nil
}

// renderStarlark runs a stdstarlark bundle's compose(ctx) for one resource.
func renderStarlark(ctx context.Context, cache *flow.Cache, fl renderFlags, d *document.Document, observed map[string]stdcel.Observed) (renderedInstance, error) {
	m := d.Message.(*convergev1.ApplyResourceRequest)
	id := m.GetNamespace() + "/" + m.GetKind() + "/" + m.GetName()
	spec, err := m.GetSpec().MarshalJSON()
	if err != nil || m.GetSpec() == nil {
		spec = []byte("{}")
	}
	t := &converge.Task{Namespace: m.GetNamespace(), Kind: m.GetKind(), KindVersion: int(m.GetKindVersion()), Name: m.GetName(),
		Generation: 1, Labels: m.GetLabels(), Spec: spec}
	res, err := stdstarlark.Render(ctx, fl.starlark, fl.main, t)
	if err != nil {
		return renderedInstance{}, fmt.Errorf("%s: %s: --starlark %s: %w", d.Where(), id, fl.starlark, err)
	}
	r, _, err := renderComposed(cache, res.Children, res.Edges, observed)
	if err != nil {
		return r, fmt.Errorf("%s: %s: %w", d.Where(), id, err)
	}
	r.Composer, r.Instance = "starlark bundle "+fl.starlark, id
	if res.Status != nil {
		v, err := jsonValue(res.Status)
		if err != nil {
			return r, fmt.Errorf("%s: %s: status: %w", d.Where(), id, err)
		}
		r.Status, _ = v.(map[string]any)
	}
	return r, nil
}

// orEmpty is v, or an empty object for a missing one (nil, or a nil
// map), as the server reads a missing spec or status.
func orEmpty(v any) any {
	if m, ok := v.(map[string]any); v == nil || (ok && m == nil) {
		return map[string]any{}
	}
	return v
}

// jsonValue is v as decoded JSON (numbers as json.Number), as the server
// holds a spec.
func jsonValue(v any) (any, error) {
	if v == nil {
		return map[string]any{}, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return schema.Decode(raw)
}

func decodeStruct(s *structpb.Struct) (map[string]any, error) {
	if s == nil {
		return map[string]any{}, nil
	}
	raw, err := s.MarshalJSON()
	if err != nil {
		return nil, err
	}
	v, err := schema.Decode(raw)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	return m, nil
}

// readObserved reads --observed: KIND/NAME -> {status, spec}.
func readObserved(path string, stdin io.Reader) (map[string]stdcel.Observed, error) {
	obj, err := document.ReadObject(path, stdin)
	if err != nil {
		return nil, err
	}
	out := map[string]stdcel.Observed{}
	for key, v := range obj.GetFields() {
		if !strings.Contains(key, "/") {
			return nil, fmt.Errorf("%s: %q: keys are KIND/NAME, e.g. demo.database/shop-db", path, key)
		}
		entry := v.GetStructValue()
		if entry == nil {
			return nil, fmt.Errorf("%s: %s: want a mapping with status and spec", path, key)
		}
		var o stdcel.Observed
		for field, fv := range entry.GetFields() {
			m, err := decodeStruct(fv.GetStructValue())
			if err != nil || fv.GetStructValue() == nil {
				return nil, fmt.Errorf("%s: %s.%s: want a mapping", path, key, field)
			}
			switch field {
			case "status":
				o.Status = m
			case "spec":
				o.Spec = m
			default:
				return nil, fmt.Errorf("%s: %s.%s: unknown field; an observed child has status and spec", path, key, field)
			}
		}
		out[key] = o
	}
	return out, nil
}

func printRendered(w io.Writer, r renderedInstance) {
	fmt.Fprintf(w, "%s (%s): %d children, %d edges\n", r.Instance, r.Composer, len(r.Children), len(r.Edges))
	after := map[string][]string{}
	for _, e := range r.Edges {
		after[e.Dependent] = append(after[e.Dependent], e.Dependency)
	}
	for _, c := range r.Children {
		key := c.Kind + "/" + c.Name
		line := fmt.Sprintf("  + %s v%d", key, c.KindVersion)
		if deps := after[key]; len(deps) > 0 {
			sort.Strings(deps)
			line += "  after " + strings.Join(deps, ", ")
		}
		if r.observed[key] {
			line += "  (observed)"
		}
		fmt.Fprintln(w, line)
		fmt.Fprintf(w, "      spec: %s\n", compactJSON(c.Spec))
		for _, why := range c.Waiting {
			fmt.Fprintf(w, "      %s\n", why)
		}
	}
	if r.Status != nil {
		fmt.Fprintf(w, "  status: %s\n", compactJSON(r.Status))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  status not projected: %s\n", p)
	}
	for _, n := range r.NotReady {
		fmt.Fprintf(w, "  not ready: %s\n", n)
	}
}

// compactJSON is v on one line, with <, > and & as they are.
func compactJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimRight(b.String(), "\n")
}
