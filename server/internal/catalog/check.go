package catalog

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/convergehq/converge/stdworker/stdstarlark"
)

// stdGraphKind is the kind of the resources that define kinds with a CEL
// graph.
const stdGraphKind = "std.graph"

// Check checks the catalog and returns every problem, sorted by file and
// line. base is the catalog as it was (e.g. at the target branch of a pull
// request) for the stability rule C6; nil skips that rule. ctx bounds the
// work.
func (c *Catalog) Check(ctx context.Context, base *Catalog) []Problem {
	ch := newChecker(ctx, c)
	ch.problems = append(ch.problems, c.problems...)
	ch.teams()
	ch.claims()
	for _, k := range c.Kinds() {
		ch.kindLayout(k)
	}
	for _, k := range c.Kinds() {
		for _, v := range k.Versions {
			if ch.byName[k.Name] == k {
				ch.resolve(k.Name, v.N)
			} else if len(v.Docs) == 1 && v.Docs[0].Manifest() != nil {
				// A second claim of a kind (C9) is still checked, apart
				// from graphs, whose names would clash.
				ch.compileManifest(v.Docs[0], v.Docs[0].Manifest(), false)
			}
		}
		ch.conversions(k)
		ch.examples(k)
		ch.configs(k)
		ch.bindings(k)
		ch.bundles(k)
	}
	if base != nil {
		ch.stable(newChecker(ctx, base))
	}
	return sortProblems(ch.problems)
}

// teams checks C8: every team has an OWNERS file naming someone.
func (ch *checker) teams() {
	for _, t := range ch.c.Teams {
		switch {
		case !t.HasOwners:
			ch.add(Problem{File: t.OwnersFile, Rule: RuleOwners,
				Message: "missing: every team directory has an OWNERS file, one owner (a handle, a SPIFFE ID or a group) per line"})
		case len(t.Owners) == 0:
			ch.add(Problem{File: t.OwnersFile, Rule: RuleOwners, Message: "names no owner: add at least one, one per line"})
		}
	}
}

// claims checks C9: a kind name belongs to one team.
func (ch *checker) claims() {
	byName := map[string][]*Kind{}
	for _, k := range ch.c.Kinds() {
		byName[k.Name] = append(byName[k.Name], k)
	}
	for _, ks := range byName {
		if len(ks) < 2 {
			continue
		}
		for _, k := range ks {
			var others []string
			for _, o := range ks {
				if o != k {
					others = append(others, o.Dir)
				}
			}
			ch.add(Problem{File: k.Dir, Rule: RuleOneTeam,
				Message: fmt.Sprintf("kind %s is also claimed by %s: a kind belongs to one team", k.Name, strings.Join(others, ", "))})
		}
	}
}

// kindLayout checks a kind directory's README (C11), its version files
// (C7, C10, C11) and that its versions are contiguous (C7).
func (ch *checker) kindLayout(k *Kind) {
	if !k.HasReadme {
		ch.add(Problem{File: path.Join(k.Dir, readmeFile), Rule: RulePlacement,
			Message: "missing: every kind directory has a README.md saying what the kind is, its spec, its status and how it is served"})
	}
	for _, f := range k.BadVersionFiles {
		ch.add(Problem{File: f, Rule: RuleVersions, Message: "not a version file name: v<N>.yaml with N = 1, 2, 3 ... (no leading zeros)"})
	}
	if len(k.Versions) == 0 {
		ch.add(Problem{File: k.Dir, Rule: RuleVersions, Message: "no version: a kind directory holds v1.yaml, v2.yaml ..."})
	}
	for i, v := range k.Versions {
		want := 1
		if i > 0 {
			want = k.Versions[i-1].N + 1
		}
		if v.N != want {
			ch.add(Problem{File: v.File, Rule: RuleVersions,
				Message: fmt.Sprintf("v%d.yaml is missing: versions are contiguous from v1", want)})
		}
		ch.versionDoc(k, v)
	}
}

// versionDoc checks that a version file holds one manifest or std.graph
// resource of its kind, version and team.
func (ch *checker) versionDoc(k *Kind, v *Version) {
	if v.broken {
		return
	}
	if v.Count != 1 {
		ch.add(Problem{File: v.File, Rule: RulePlacement,
			Message: fmt.Sprintf("holds %d documents: a version file holds exactly one (a manifest or a %s resource)", v.Count, stdGraphKind)})
		return
	}
	if len(v.Docs) != 1 {
		return // the parse problem is reported
	}
	d := v.Docs[0]
	if m := d.Manifest(); m != nil {
		if m.GetKind() != k.Name {
			ch.at(d, "kind", RulePlacement, "is %q but the directory is %s: a kind lives in the directory named after it", m.GetKind(), k.Dir)
		}
		if int(m.GetKindVersion()) != v.N {
			ch.at(d, "kind_version", RuleVersions, "is %d but the file is v%d.yaml", m.GetKindVersion(), v.N)
		}
		if m.GetOwner() != k.Team {
			ch.at(d, "owner", RuleOwner, "is %q but the kind is in team %s's directory: owner is the team", m.GetOwner(), k.Team)
		}
		return
	}
	r := d.Resource()
	if r == nil || r.GetKind() != stdGraphKind {
		ch.at(d, "type", RulePlacement, "a version file holds a manifest or a %s resource, not a %s", stdGraphKind, describeDoc(d))
		return
	}
	if r.GetKindVersion() != 1 {
		ch.at(d, "kind_version", RulePlacement, "%s has version 1 only, got %d", stdGraphKind, r.GetKindVersion())
	}
	spec := r.GetSpec().AsMap()
	if kind, _ := spec["kind"].(string); kind != k.Name {
		ch.at(d, "spec.kind", RulePlacement, "is %q but the directory is %s: a graph defines the kind named after its directory", kind, k.Dir)
	}
	if n, ok := spec["version"].(float64); !ok || int(n) != v.N || n != float64(int(n)) {
		ch.at(d, "spec.version", RuleVersions, "is %v but the file is v%d.yaml", spec["version"], v.N)
	}
}

// describeDoc names a document's type for messages.
func describeDoc(d *Doc) string {
	if r := d.Resource(); r != nil {
		return "resource of kind " + r.GetKind()
	}
	return d.Type
}

// bundles checks C5: every bundle loads.
func (ch *checker) bundles(k *Kind) {
	for i, dir := range k.Bundles {
		sub, err := fs.Sub(ch.c.fsys, dir)
		if err == nil {
			err = stdstarlark.CheckBundle(sub, bundleMain)
		}
		if err == nil {
			continue
		}
		p := Problem{File: k.bundleShown[i], Rule: RuleBundle, Message: err.Error()}
		if be, ok := err.(*stdstarlark.BundleError); ok {
			p.Message = be.Message
			if be.File != "" {
				p.File = joinShown(k.bundleShown[i], be.File)
				p.Line = be.Line
			}
		}
		ch.add(p)
	}
}

// joinShown joins a file inside a shown directory, with the directory's
// separator.
func joinShown(dir, file string) string {
	sep := "/"
	if strings.Contains(dir, `\`) && !strings.Contains(dir, "/") {
		sep = `\`
	}
	return dir + sep + strings.ReplaceAll(file, "/", sep)
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
