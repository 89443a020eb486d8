package manifest

import (
	"slices"
	"strconv"
)

// Rule identifies a manifest legality rule. docs/kinds.md gives each rule's
// reason and an example of a violation.
type Rule string

// The legality rules, in the order docs/kinds.md lists them.
const (
	RuleUniqueReactionNames        Rule = "M1"
	RuleOneReactionPerTrigger      Rule = "M2"
	RuleSpecChangeRequired         Rule = "M3"
	RuleDeleteNeedsFinalizer       Rule = "M4"
	RuleDeleteEmitsFinalizer       Rule = "M5"
	RuleFinalizerNeedsDelete       Rule = "M6"
	RuleFinalizerOnlyFromDelete    Rule = "M7"
	RuleChildrenOnlyFromSpecChange Rule = "M8"
	RuleEdgesNeedChildren          Rule = "M9"
	RuleSpecChangeEmitsResult      Rule = "M10"
	RuleSettledNeedsComposer       Rule = "M11"
	RuleSettledEmitsStatusOnly     Rule = "M12"
	RuleOperationNeedsVerb         Rule = "M13"
	RuleVerbDeclared               Rule = "M14"
	RuleOperationServed            Rule = "M15"
	RuleOutputOnlyFromOperation    Rule = "M16"
	RuleReactorEmitsSideEffectOnly Rule = "M17"
	RuleReactorKindAlone           Rule = "M18"
	RuleSideEffectOnlyFromReactor  Rule = "M19"
	RuleResyncNeedsInterval        Rule = "M20"
	RuleVerbOnlyOnOperation        Rule = "M21"
	RuleUniqueOperationVerbs       Rule = "M22"
	RuleSchemaCompiles             Rule = "M23"
	RuleSchemaDescribesObject      Rule = "M24"
	RuleObserveEmitsStatusOnly     Rule = "M25"
	RuleObservePolicyNeedsReaction Rule = "M26"
	RuleSecretNotPublished         Rule = "M27"
)

// Rules returns every rule in order.
func Rules() []Rule {
	return slices.Clone(allRules)
}

var allRules = []Rule{
	RuleUniqueReactionNames, RuleOneReactionPerTrigger, RuleSpecChangeRequired,
	RuleDeleteNeedsFinalizer, RuleDeleteEmitsFinalizer, RuleFinalizerNeedsDelete,
	RuleFinalizerOnlyFromDelete, RuleChildrenOnlyFromSpecChange, RuleEdgesNeedChildren,
	RuleSpecChangeEmitsResult, RuleSettledNeedsComposer, RuleSettledEmitsStatusOnly,
	RuleOperationNeedsVerb, RuleVerbDeclared, RuleOperationServed,
	RuleOutputOnlyFromOperation, RuleReactorEmitsSideEffectOnly, RuleReactorKindAlone,
	RuleSideEffectOnlyFromReactor, RuleResyncNeedsInterval, RuleVerbOnlyOnOperation,
	RuleUniqueOperationVerbs, RuleSchemaCompiles, RuleSchemaDescribesObject,
	RuleObserveEmitsStatusOnly, RuleObservePolicyNeedsReaction,
	RuleSecretNotPublished,
}

var summaries = map[Rule]string{
	RuleUniqueReactionNames:        "reaction names are unique",
	RuleOneReactionPerTrigger:      "at most one reaction per trigger; for operation, at most one per verb",
	RuleSpecChangeRequired:         "a kind that is not a reactor kind has a specChange reaction (an observe reaction, when policy.management_policy is observe)",
	RuleDeleteNeedsFinalizer:       "a deleteRequested reaction needs the manifest's finalizer",
	RuleDeleteEmitsFinalizer:       "a deleteRequested reaction emits finalizer",
	RuleFinalizerNeedsDelete:       "a manifest with a finalizer has a deleteRequested reaction",
	RuleFinalizerOnlyFromDelete:    "only deleteRequested emits finalizer",
	RuleChildrenOnlyFromSpecChange: "only specChange (and resync when policy.resync_recomposes) emits children, edges or configs",
	RuleEdgesNeedChildren:          "edges and configs are emitted together with children",
	RuleSpecChangeEmitsResult:      "a specChange reaction emits status or children",
	RuleSettledNeedsComposer:       "childrenSettled needs a composer",
	RuleSettledEmitsStatusOnly:     "childrenSettled emits only status and conditions",
	RuleOperationNeedsVerb:         "an operation reaction names its verb",
	RuleVerbDeclared:               "an operation reaction's verb is declared in operations[]",
	RuleOperationServed:            "every declared operation has a reaction",
	RuleOutputOnlyFromOperation:    "only operation reactions emit operationOutput",
	RuleReactorEmitsSideEffectOnly: "a reactor reaction emits only sideEffect",
	RuleReactorKindAlone:           "a kind with a reactor reaction has no other reactions",
	RuleSideEffectOnlyFromReactor:  "only reactor reactions emit sideEffect",
	RuleResyncNeedsInterval:        "a resync reaction needs policy.resync_interval_seconds > 0",
	RuleVerbOnlyOnOperation:        "verb is set only on operation reactions",
	RuleUniqueOperationVerbs:       "operations[].verb values are unique",
	RuleSchemaCompiles:             "spec, status, config and operation input schemas compile",
	RuleSchemaDescribesObject:      "spec_schema and status_schema describe an object",
	RuleObserveEmitsStatusOnly:     "an observe reaction emits only status and conditions",
	RuleObservePolicyNeedsReaction: "policy.management_policy observe needs an observe reaction",
	RuleSecretNotPublished:         "a secret property (writeOnly or x-converge-secret) sets no default, examples, const or enum",
}

// Summary returns the rule in one line, e.g. "reaction names are unique".
func (r Rule) Summary() string {
	return summaries[r]
}

// number returns the rule's ordinal for sorting (M2 before M10).
func (r Rule) number() int {
	n, err := strconv.Atoi(string(r[min(1, len(r)):]))
	if err != nil {
		return 0
	}
	return n
}
