package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rule is a catalog rule's ID, e.g. "C6". docs/catalog.md describes each.
type Rule string

// The catalog rules.
const (
	RuleManifest  Rule = "C1"  // manifest legality (manifest.Compile)
	RuleSchema    Rule = "C2"  // JSON Schemas are well-formed
	RuleExample   Rule = "C3"  // examples (and configs) validate against their kind version
	RuleGraph     Rule = "C4"  // CEL graphs type-check against the kinds they use
	RuleBundle    Rule = "C5"  // Starlark bundles load
	RuleStable    Rule = "C6"  // no breaking change to a version in --base
	RuleVersions  Rule = "C7"  // versions contiguous from v1, file names match
	RuleOwners    Rule = "C8"  // one non-empty OWNERS per team
	RuleOneTeam   Rule = "C9"  // a kind is claimed by one team only
	RuleOwner     Rule = "C10" // the team directory matches the manifest's owner
	RulePlacement Rule = "C11" // documents of the right type in the right place
	RuleConvert   Rule = "C12" // conversions type-check against both versions' spec_schema
)

// Problem is one thing wrong with a catalog.
type Problem struct {
	// File is the file (or directory) the problem is in, as shown; Line
	// is its 1-based line, 0 when unknown.
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Path is the field path inside the document, e.g.
	// "spec.resources[1].template.spec.port"; "" for the file itself.
	Path string `json:"path,omitempty"`
	// Rule is the rule broken.
	Rule Rule `json:"rule"`
	// Message says what is wrong and how to fix it.
	Message string `json:"message"`
}

// String renders the problem as `file:line: path: message (C6)`, leaving
// out the line when it is unknown and the path when there is none.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(p.Line))
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s (%s)", p.Message, p.Rule)
	return b.String()
}

func (r Rule) number() int {
	n, _ := strconv.Atoi(strings.TrimPrefix(string(r), "C"))
	return n
}

// sortProblems orders problems by file, line, rule, path and message, and
// drops exact duplicates.
func sortProblems(ps []Problem) []Problem {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Rule.number(), b.Rule.number()), strings.Compare(a.Path, b.Path),
			strings.Compare(a.Message, b.Message))
	})
	return slices.Compact(ps)
}
