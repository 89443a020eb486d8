package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/manifest"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/stdworker/stdcel"
)

// checker holds what checking one catalog has found so far.
type checker struct {
	ctx      context.Context
	c        *Catalog
	problems []Problem
	// byName is the kind directory of each kind name (the first team's
	// when several claim it: C9 reports that).
	byName   map[string]*Kind
	resolved map[versionKey]*resolved
}

type versionKey struct {
	kind string
	n    int
}

// resolved is one kind version of the catalog, compiled.
type resolved struct {
	doc *Doc
	// manifest is the version's manifest, derived from its graph for a
	// graph-defined kind; nil when there is none to check.
	manifest *convergev1.KindManifest
	// compiled is the legal manifest; nil when it is not legal.
	compiled *manifest.Kind
	// busy is set while the version's graph is being compiled, to find
	// graphs that use each other.
	busy bool
}

func newChecker(ctx context.Context, c *Catalog) *checker {
	ch := &checker{ctx: ctx, c: c, byName: map[string]*Kind{}, resolved: map[versionKey]*resolved{}}
	for _, k := range c.Kinds() {
		if _, ok := ch.byName[k.Name]; !ok {
			ch.byName[k.Name] = k
		}
	}
	return ch
}

func (ch *checker) add(p Problem) { ch.problems = append(ch.problems, p) }

// at reports a problem at a field of a document.
func (ch *checker) at(d *Doc, path string, rule Rule, format string, args ...any) {
	ch.add(Problem{File: d.File, Line: d.LineOf(path), Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// version finds a kind version's file in the catalog.
func (ch *checker) version(kind string, n int) (*Kind, *Version) {
	k := ch.byName[kind]
	if k == nil {
		return nil, nil
	}
	for _, v := range k.Versions {
		if v.N == n {
			return k, v
		}
	}
	return k, nil
}

// resolve compiles a kind version of the catalog once, reporting its
// problems (C1, C2, C4); nil when the catalog does not have it.
func (ch *checker) resolve(kind string, n int) *resolved {
	key := versionKey{kind, n}
	if r, ok := ch.resolved[key]; ok {
		return r
	}
	k, v := ch.version(kind, n)
	if v == nil {
		return nil
	}
	r := &resolved{}
	ch.resolved[key] = r
	if len(v.Docs) != 1 || v.Count != 1 {
		return r
	}
	r.doc = v.Docs[0]
	if m := r.doc.Manifest(); m != nil {
		r.manifest = m
		r.compiled = ch.compileManifest(r.doc, m, false)
		return r
	}
	if res := r.doc.Resource(); res != nil && res.GetKind() == stdGraphKind {
		r.busy = true
		r.manifest = ch.compileGraph(r.doc, k.Team)
		r.busy = false
		if r.manifest != nil {
			r.compiled = ch.compileManifest(r.doc, r.manifest, true)
		}
	}
	return r
}

// compileManifest checks a manifest with the server's rules (C1; its
// schemas' problems are C2). derived says it was derived from the graph in
// d, whose lines it cannot point into.
func (ch *checker) compileManifest(d *Doc, m *convergev1.KindManifest, derived bool) *manifest.Kind {
	k, err := manifest.Compile(m)
	if err == nil {
		return k
	}
	var me *manifest.Error
	if !errors.As(err, &me) {
		ch.at(d, "", RuleManifest, "%v", err)
		return nil
	}
	for _, p := range me.Problems {
		rule := RuleManifest
		if p.Rule == manifest.RuleSchemaCompiles {
			rule = RuleSchema
		}
		msg := string(p.Rule) + ": " + p.Message
		if p.Reaction != "" {
			msg = fmt.Sprintf("reaction %q: %s", p.Reaction, msg)
		}
		prob := Problem{File: d.File, Line: d.LineOf(p.Field), Path: p.Field, Rule: rule, Message: msg}
		if derived {
			prob.Line = d.LineOf("spec")
			prob.Message = "the manifest the graph defines: " + msg
		}
		ch.add(prob)
	}
	return nil
}

// compileGraph type-checks the graph in d (C4) against the kinds of the
// catalog and the std kinds, and returns the manifest of the kind it
// defines, owned by team; nil when the graph has problems. The owner is
// only a placeholder here (C1 and C6 do not look at owners): on a server,
// stdcel applies the kind with owner std.graph/<namespace>/<name>.
func (ch *checker) compileGraph(d *Doc, team string) *convergev1.KindManifest {
	raw, err := json.Marshal(d.Resource().GetSpec().AsMap())
	if err != nil {
		ch.at(d, "spec", RuleGraph, "cannot read the graph: %v", err)
		return nil
	}
	def, err := stdcel.DecodeDefinition(raw)
	if err != nil {
		ch.at(d, "spec", RuleGraph, "%s", strings.TrimPrefix(err.Error(), "spec: "))
		return nil
	}
	missing := ch.missingKinds(d, def)
	g, err := stdcel.Compile(ch.ctx, def, ch.lookup)
	var ce *stdcel.CheckError
	switch {
	case errors.As(err, &ce):
		for _, p := range ce.Problems {
			if missing[p.Path] {
				continue
			}
			path := "spec." + p.Path
			if strings.HasPrefix(p.Path, "[") {
				path = "spec" + p.Path
			}
			line := d.LineOf(path)
			if p.Line > 0 {
				path += fmt.Sprintf(":%d:%d", p.Line, p.Column)
			}
			ch.add(Problem{File: d.File, Line: line, Path: path, Rule: RuleGraph, Message: p.Message})
		}
		return nil
	case err != nil:
		ch.at(d, "spec", RuleGraph, "cannot check the graph: %v", err)
		return nil
	}
	m, err := g.Manifest(team)
	if err != nil {
		ch.at(d, "spec", RuleGraph, "cannot derive the kind's manifest: %v", err)
		return nil
	}
	return m
}

// missingKinds reports the resources of a graph whose kind version is
// neither in the catalog nor a std kind, or is defined by a graph being
// compiled (graphs using each other), and returns their paths in stdcel's
// problems, whose own message about them speaks of a server.
func (ch *checker) missingKinds(d *Doc, def *stdcel.Definition) map[string]bool {
	out := map[string]bool{}
	for i, r := range def.Resources {
		path := fmt.Sprintf("resources[%d].kind", i)
		_, v := ch.version(r.Kind, r.Version)
		switch {
		case v == nil && stdManifest(r.Kind, r.Version) == nil:
			ch.at(d, "spec."+path, RuleGraph, "kind %s v%d is not in the catalog (nor a std kind)", r.Kind, r.Version)
			out[path] = true
		case v != nil && ch.resolved[versionKey{r.Kind, r.Version}] != nil && ch.resolved[versionKey{r.Kind, r.Version}].busy:
			ch.at(d, "spec."+path, RuleGraph, "kind %s v%d is defined by a graph that uses this one: graphs cannot use each other in a cycle", r.Kind, r.Version)
			out[path] = true
		}
	}
	return out
}

// lookup gives stdcel the schemas of a kind version: the catalog's, else
// the std kinds'.
func (ch *checker) lookup(_ context.Context, kind string, version int) (*stdcel.KindSchemas, error) {
	m := stdManifest(kind, version)
	if _, v := ch.version(kind, version); v != nil {
		r := ch.resolve(kind, version)
		if r.busy {
			return nil, stdcel.ErrUnknownKind
		}
		if r.manifest == nil {
			return &stdcel.KindSchemas{}, nil // its own problems are reported
		}
		m = r.manifest
	}
	if m == nil {
		return nil, stdcel.ErrUnknownKind
	}
	ks := &stdcel.KindSchemas{}
	if m.GetSpecSchema() != nil {
		ks.Spec = m.GetSpecSchema().AsMap()
	}
	if m.GetStatusSchema() != nil {
		ks.Status = m.GetStatusSchema().AsMap()
	}
	return ks, nil
}

// examples checks C3: every example is a resource of its kind whose spec
// validates against its version's spec_schema.
func (ch *checker) examples(k *Kind) {
	for _, d := range k.Examples {
		r := d.Resource()
		if r == nil {
			ch.at(d, "type", RulePlacement, "%s/ holds resource documents of %s, not a %s", examplesDir, k.Name, d.Type)
			continue
		}
		if r.GetKind() != k.Name {
			ch.at(d, "kind", RulePlacement, "is %q: %s/ of %s holds resources of %s", r.GetKind(), examplesDir, k.Dir, k.Name)
			continue
		}
		target := ch.target(d, k, int(r.GetKindVersion()))
		if target == nil {
			continue
		}
		ch.violations(d, "spec", target.Spec.Validate(r.GetSpec().AsMap()))
	}
}

// configs checks provider configs: of their kind, for a version the
// catalog has, valid against its config_schema (C3).
func (ch *checker) configs(k *Kind) {
	for _, d := range k.Configs {
		c, ok := d.Message.(*convergev1.ProviderConfig)
		if !ok {
			ch.at(d, "type", RulePlacement, "%s/ holds providerconfig documents of %s, not a %s", configsDir, k.Name, describeDoc(d))
			continue
		}
		if c.GetKind() != k.Name {
			ch.at(d, "kind", RulePlacement, "is %q: %s/ of %s holds provider configs of %s", c.GetKind(), configsDir, k.Dir, k.Name)
			continue
		}
		target := ch.target(d, k, int(c.GetKindVersion()))
		if target == nil {
			continue
		}
		ch.violations(d, "config", target.Config.Validate(c.GetConfig().AsMap()))
	}
}

// bindings checks that bindings/ holds reactor bindings that involve the
// kind, as the reactor or as the kind watched.
func (ch *checker) bindings(k *Kind) {
	for _, d := range k.Bindings {
		b, ok := d.Message.(*convergev1.ReactorBinding)
		if !ok {
			ch.at(d, "type", RulePlacement, "%s/ holds reactorbinding documents, not a %s", bindingsDir, describeDoc(d))
			continue
		}
		if b.GetReactorKind() != k.Name && b.GetWatchKind() != k.Name {
			ch.at(d, "reactor_kind", RulePlacement, "is %q and watch_kind is %q: %s/ of %s holds bindings of %s (as the reactor or the kind watched)",
				b.GetReactorKind(), b.GetWatchKind(), bindingsDir, k.Dir, k.Name)
		}
	}
}

// target is the compiled kind version a document of kind k names; nil
// when the catalog has no such version (reported, C3) or it is illegal
// (reported with the version).
func (ch *checker) target(d *Doc, k *Kind, n int) *manifest.Kind {
	r := ch.resolve(k.Name, n)
	if r == nil {
		ch.at(d, "kind_version", RuleExample, "%s has no v%d in the catalog", k.Name, n)
		return nil
	}
	return r.compiled
}

// violations reports a schema validation error of the value at field.
func (ch *checker) violations(d *Doc, field string, err error) {
	if err == nil {
		return
	}
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		ch.at(d, field, RuleExample, "%v", err)
		return
	}
	for _, v := range ve.Violations {
		ch.at(d, field+v.Path, RuleExample, "%s", v.Message)
	}
}
