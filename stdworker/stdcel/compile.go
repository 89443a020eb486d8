package stdcel

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/convergehq/converge/internal/celschema"
)

// KindSchemas are the schemas of one kind version a graph's resources use.
type KindSchemas struct {
	// Spec and Status are the kind's spec_schema and status_schema,
	// decoded JSON; nil when the kind has none.
	Spec, Status map[string]any
}

// ErrUnknownKind is what a LookupKind returns for a kind version the
// server does not have. Wrapped as "%w: MORE", MORE replaces the default
// remedy in the problem reported ("kind K vN MORE").
var ErrUnknownKind = errors.New("kind version is not registered")

func unknownWhy(err error) string {
	if why, ok := strings.CutPrefix(err.Error(), ErrUnknownKind.Error()+": "); ok && why != "" {
		return why
	}
	return "is not registered on the server; apply its manifest first"
}

// LookupKind returns the schemas of a kind version.
type LookupKind func(ctx context.Context, kind string, version int) (*KindSchemas, error)

// Graph is a checked graph: it composes instances of the kind it defines.
// It is immutable and safe for concurrent use.
type Graph struct {
	// Kind and Version name the kind the graph defines.
	Kind         string
	Version      int
	description  string
	specSchema   map[string]any
	statusSchema map[string]any
	// nodes are in dependency order: a node comes after what it reads.
	nodes  []*node
	byID   map[string]*node
	status *tmpl
	// statusCheck validates projected statuses against a given
	// status_schema; nil when the schema is derived.
	statusCheck *jsonschema.Schema
	// env parses expressions when they are rewritten for the server.
	env *cel.Env
}

func (g *Graph) parseEnv() *cel.Env { return g.env }

// node is one resource of the graph.
type node struct {
	index      int
	id         string
	kind       string
	version    int
	path       string
	collection bool
	iters      []iterVar
	name       *tmpl
	labelKeys  []string
	labels     map[string]*tmpl
	spec       *tmpl
	include    []*expr
	ready      []*expr
	deps       []string
}

// iterVar is one forEach variable and the list it ranges over.
type iterVar struct {
	name string
	list *expr
}

var (
	kindPattern = regexp.MustCompile(`^[a-z][a-z0-9]*([.-][a-z0-9]+)*$`)
	idPattern   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]*$`)
	// celReserved are CEL's reserved words and literals: no id or
	// variable may take them.
	celReserved = map[string]bool{"as": true, "break": true, "const": true, "continue": true, "else": true,
		"for": true, "function": true, "if": true, "import": true, "let": true, "loop": true, "package": true,
		"namespace": true, "return": true, "var": true, "void": true, "while": true, "in": true,
		"true": true, "false": true, "null": true}
)

// checker collects a graph's problems while compiling it.
type checker struct {
	ps         problems
	collection map[string]bool
}

// Compile checks a graph like a compiler and returns it ready to compose:
// every expression parses and type-checks against the instance's spec
// schema and the schemas of the kinds it reads (lookup supplies them),
// templates match their kinds' spec schemas, every id is known and the
// references form no cycle. A graph with problems is a *CheckError
// listing them all with their paths and positions; any other error is
// lookup's, worth retrying.
func Compile(ctx context.Context, def *Definition, lookup LookupKind) (*Graph, error) {
	c := &checker{collection: map[string]bool{}}
	g := &Graph{Kind: def.Kind, Version: def.Version, description: def.Description, byID: map[string]*node{}}
	if !kindPattern.MatchString(def.Kind) || len(def.Kind) > 63 {
		c.ps.add("kind", "%q is not a kind name: 1-63 lower-case letters and digits in words joined by '.' or '-'", def.Kind)
	}
	if def.Version < 1 || def.Version > 32767 {
		c.ps.add("version", "%d is not a kind version: 1 to 32767", def.Version)
	}
	g.specSchema = c.specSchema(def)
	if len(def.Resources) == 0 {
		c.ps.add("resources", "a graph needs at least one resource")
	}

	schemas, err := c.resourceKinds(ctx, def, lookup)
	if err != nil {
		return nil, err
	}
	ts, err := celschema.New()
	if err != nil {
		return nil, err
	}
	schemaT := ts.Object("schema", map[string]*types.Type{
		"spec":     ts.FromSchema("schema.spec", g.specSchema),
		"metadata": ts.Object("schema.metadata", map[string]*types.Type{"name": types.StringType, "namespace": types.StringType}),
	})
	vars := map[string]*types.Type{"schema": schemaT}
	singles := map[string]*types.Type{}
	ids := map[string]bool{}
	for i, r := range def.Resources {
		if !c.validID(def, i) {
			continue
		}
		ids[r.ID] = true
		c.collection[r.ID] = len(r.ForEach) > 0
		ks := schemas[i]
		if ks == nil {
			vars[r.ID] = types.DynType
			continue
		}
		singles[r.ID] = ts.Object(r.ID, map[string]*types.Type{
			"spec":   ts.FromSchema(r.ID+".spec", ks.Spec),
			"status": ts.FromSchema(r.ID+".status", ks.Status),
		})
		vars[r.ID] = singles[r.ID]
		if c.collection[r.ID] {
			vars[r.ID] = types.NewListType(singles[r.ID])
		}
	}
	base, err := newEnv(ts, vars)
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	g.env = base
	reserved := map[string]bool{"schema": true}
	for id := range ids {
		reserved[id] = true
	}
	for i, r := range def.Resources {
		if !ids[r.ID] || g.byID[r.ID] != nil {
			continue
		}
		n := c.resource(g, i, r, schemas[i], &resEnv{ts: ts, base: base, ids: ids, reserved: reserved, schemaT: schemaT, self: singles[r.ID]})
		g.nodes = append(g.nodes, n)
		g.byID[r.ID] = n
	}
	c.cycles(g)
	c.statusProjection(g, def, &scope{env: base, ids: ids, allowed: ids, collections: true, what: "the status", reserved: reserved})
	if err := c.ps.err(); err != nil {
		return nil, err
	}
	g.nodes = topoOrder(g.nodes, g.byID)
	return g, nil
}

// specSchema returns the instance kind's spec schema, from spec_schema or
// the compact spec_fields.
func (c *checker) specSchema(def *Definition) map[string]any {
	s := def.SpecSchema
	if def.SpecFields != nil {
		if s != nil {
			c.ps.add("spec_fields", "set spec_schema or spec_fields, not both")
		}
		s = compactSchema(&c.ps, "spec_fields", def.SpecFields)
	}
	if s == nil {
		return map[string]any{"type": "object"}
	}
	if ts := celschema.Types(s); len(ts) > 0 && !containsStr(ts, "object") {
		c.ps.add("spec_schema.type", "must allow \"object\": an instance's spec is a JSON object")
	}
	return s
}

// validID checks resources[i]'s id, kind and version.
func (c *checker) validID(def *Definition, i int) bool {
	r := def.Resources[i]
	path := indexPath("resources", i)
	ok := true
	switch {
	case !idPattern.MatchString(r.ID) || len(r.ID) > 63:
		c.ps.add(path+".id", "%q is not an id: a letter, then letters, digits or '_', at most 63", r.ID)
		ok = false
	case r.ID == "schema" || celReserved[r.ID]:
		c.ps.add(path+".id", "%q is reserved; pick another id", r.ID)
		ok = false
	}
	for j := range i {
		if def.Resources[j].ID == r.ID && ok {
			c.ps.add(path+".id", "id %q is already used by resources[%d]", r.ID, j)
			ok = false
		}
	}
	return ok
}

// resourceKinds looks up the schemas of every resource's kind version.
func (c *checker) resourceKinds(ctx context.Context, def *Definition, lookup LookupKind) ([]*KindSchemas, error) {
	out := make([]*KindSchemas, len(def.Resources))
	cache := map[string]*KindSchemas{}
	unknown := map[string]string{} // why a kind version is unknown, by key
	for i, r := range def.Resources {
		path := indexPath("resources", i)
		switch {
		case !kindPattern.MatchString(r.Kind) || len(r.Kind) > 63:
			c.ps.add(path+".kind", "%q is not a kind name", r.Kind)
			continue
		case r.Version < 1 || r.Version > 32767:
			c.ps.add(path+".version", "%d is not a kind version: 1 to 32767", r.Version)
			continue
		case r.Kind == def.Kind && r.Version == def.Version:
			c.ps.add(path+".kind", "the graph defines %s v%d; an instance cannot contain itself", r.Kind, r.Version)
			continue
		}
		key := fmt.Sprintf("%s@%d", r.Kind, r.Version)
		ks, seen := cache[key]
		if !seen {
			var err error
			ks, err = lookup(ctx, r.Kind, r.Version)
			if errors.Is(err, ErrUnknownKind) {
				ks, unknown[key] = nil, unknownWhy(err)
			} else if err != nil {
				return nil, fmt.Errorf("%s.kind: reading kind %s v%d: %w", path, r.Kind, r.Version, err)
			}
			cache[key] = ks
		}
		if ks == nil {
			c.ps.add(path+".kind", "kind %s v%d %s", r.Kind, r.Version, unknown[key])
			continue
		}
		out[i] = ks
	}
	return out, nil
}

// resEnv is what checking one resource needs.
type resEnv struct {
	ts       *celschema.Set
	base     *cel.Env
	ids      map[string]bool
	reserved map[string]bool
	schemaT  *types.Type
	self     *types.Type
}

// resource checks resources[i].
func (c *checker) resource(g *Graph, i int, r Resource, ks *KindSchemas, re *resEnv) *node {
	path := indexPath("resources", i)
	n := &node{index: i, id: r.ID, kind: r.Kind, version: r.Version, path: path, collection: len(r.ForEach) > 0}
	env := re.base
	iterTypes := map[string]*types.Type{}
	reserved := re.reserved
	if len(r.ForEach) > 0 {
		reserved = map[string]bool{}
		for k := range re.reserved {
			reserved[k] = true
		}
		listScope := &scope{env: re.base, ids: re.ids, what: "a forEach list", reserved: re.reserved}
		for j, entry := range r.ForEach {
			p := indexPath(path+".forEach", j)
			if len(entry) != 1 {
				c.ps.add(p, "each entry maps one variable to a list expression, e.g. {region: \"${schema.spec.regions}\"}")
				continue
			}
			for name, src := range entry {
				vp := fieldPath(p, name)
				switch {
				case !idPattern.MatchString(name) || celReserved[name]:
					c.ps.add(vp, "%q is not a variable name: a letter, then letters, digits or '_'", name)
					continue
				case reserved[name]:
					c.ps.add(vp, "the variable %q hides a name of the graph; pick another", name)
					continue
				}
				reserved[name] = true
				e := c.wholeExpr(listScope, vp, src)
				if e == nil {
					continue
				}
				elem := types.DynType
				switch e.out.Kind() {
				case types.ListKind:
					elem = e.out.Parameters()[0]
				case types.DynKind, types.AnyKind:
				default:
					c.ps.at(vp, 1, 1, "the expression is %s; forEach needs a list", celschema.TypeName(e.out))
					continue
				}
				iterTypes[name] = elem
				n.iters = append(n.iters, iterVar{name: name, list: e})
			}
		}
		if len(iterTypes) > 0 {
			opts := make([]cel.EnvOption, 0, len(iterTypes))
			for _, name := range sortedKeys(iterTypes) {
				opts = append(opts, cel.Variable(name, iterTypes[name]))
			}
			ext, err := re.base.Extend(opts...)
			if err != nil {
				c.ps.add(path+".forEach", "declaring the forEach variables: %v", err)
			} else {
				env = ext
			}
		}
	}
	noRefs := func(what string) *scope {
		return &scope{env: env, ids: re.ids, what: what, reserved: reserved}
	}
	for j, src := range r.IncludeWhen {
		p := indexPath(path+".includeWhen", j)
		if e := c.wholeExpr(noRefs("includeWhen"), p, src); e != nil {
			c.wantBool(p, e)
			n.include = append(n.include, e)
		}
	}
	c.readyWhen(n, r, re, iterTypes, reserved)
	name := r.Name
	if name == "" {
		if n.collection {
			c.ps.add(path+".name", "a forEach resource needs a name template that differs per item, e.g. \"${schema.metadata.name}-${region}\"")
		}
		name = "${schema.metadata.name}-" + strings.ToLower(strings.ReplaceAll(r.ID, "_", "-"))
	}
	n.name = c.template(noRefs("a name"), path+".name", name, map[string]any{"type": "string"})
	n.labelKeys = sortedKeys(r.Template.Labels)
	n.labels = map[string]*tmpl{}
	for _, k := range n.labelKeys {
		n.labels[k] = c.template(noRefs("a label"), fieldPath(path+".template.labels", k), r.Template.Labels[k], map[string]any{"type": "string"})
	}
	spec := map[string]any{}
	if r.Template.Spec != nil {
		spec = r.Template.Spec
	}
	var specSchema any
	if ks != nil && ks.Spec != nil {
		specSchema = ks.Spec
	}
	n.spec = c.template(&scope{env: env, ids: re.ids, allowed: re.ids, what: "a template", reserved: reserved, flows: true},
		path+".template.spec", spec, specSchema)
	n.deps = collectRefs(n.spec, nil)
	return n
}

// readyWhen checks a resource's readyWhen: booleans over the resource
// itself (one item of a forEach), schema and its forEach variables.
func (c *checker) readyWhen(n *node, r Resource, re *resEnv, iterTypes map[string]*types.Type, reserved map[string]bool) {
	if len(r.ReadyWhen) == 0 {
		return
	}
	vars := map[string]*types.Type{"schema": re.schemaT}
	for k, t := range iterTypes {
		vars[k] = t
	}
	if re.self != nil {
		vars[n.id] = re.self
	} else {
		vars[n.id] = types.DynType
	}
	env, err := newEnv(re.ts, vars)
	if err != nil {
		c.ps.add(n.path+".readyWhen", "building its CEL environment: %v", err)
		return
	}
	// In readyWhen, a forEach resource's id is the item itself.
	saved := c.collection[n.id]
	c.collection[n.id] = false
	defer func() { c.collection[n.id] = saved }()
	sc := &scope{env: env, ids: re.ids, allowed: map[string]bool{n.id: true}, what: "readyWhen", reserved: reserved, readySelf: n.id}
	for j, src := range r.ReadyWhen {
		p := indexPath(n.path+".readyWhen", j)
		if e := c.wholeExpr(sc, p, src); e != nil {
			c.wantBool(p, e)
			n.ready = append(n.ready, e)
		}
	}
}

// wholeExpr compiles src, which must be exactly one `${...}`.
func (c *checker) wholeExpr(sc *scope, path, src string) *expr {
	segs, err := parseTemplate(src)
	if err != nil {
		c.ps.add(path, "%v", err)
		return nil
	}
	if len(segs) != 1 || !segs[0].isExpr {
		c.ps.add(path, "must be one ${...} expression, e.g. \"${schema.spec.enabled}\"")
		return nil
	}
	return c.compileExpr(sc, path, segs[0].text)
}

func (c *checker) wantBool(path string, e *expr) {
	switch e.out.Kind() {
	case types.BoolKind, types.DynKind, types.AnyKind:
	default:
		c.ps.at(path, 1, 1, "the expression is %s; it must be a bool", celschema.TypeName(e.out))
	}
}

// collectRefs lists the resource ids a template reads.
func collectRefs(t *tmpl, into map[string]bool) []string {
	top := into == nil
	if top {
		into = map[string]bool{}
	}
	if t != nil {
		for _, r := range t.refs {
			into[r] = true
		}
		for _, k := range t.keys {
			collectRefs(t.fields[k], into)
		}
		for _, it := range t.items {
			collectRefs(it, into)
		}
	}
	if !top {
		return nil
	}
	return sortedKeys(into)
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
