package manifest

import (
	"fmt"
	"slices"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/trigger"
)

// checker collects every problem of one manifest.
type checker struct {
	m        *convergev1.KindManifest
	problems []Problem
}

func (c *checker) add(field, reaction string, rule Rule, format string, args ...any) {
	c.problems = append(c.problems, Problem{Field: field, Reaction: reaction, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func reactionField(i int) string { return fmt.Sprintf("reactions[%d]", i) }

func emits(r *convergev1.Reaction, e string) bool { return slices.Contains(r.GetEmits(), e) }

// composer reports whether the manifest has a composer: a specChange
// reaction that emits children.
func composer(m *convergev1.KindManifest) bool {
	return slices.ContainsFunc(m.GetReactions(), func(r *convergev1.Reaction) bool {
		return r.GetTrigger() == trigger.SpecChange && emits(r, EmitChildren)
	})
}

// reactorIndex returns the index of the first reactor reaction, or -1.
func reactorIndex(m *convergev1.KindManifest) int {
	return slices.IndexFunc(m.GetReactions(), func(r *convergev1.Reaction) bool {
		return r.GetTrigger() == trigger.Reactor
	})
}

func declaredVerb(m *convergev1.KindManifest, verb string) bool {
	return slices.ContainsFunc(m.GetOperations(), func(o *convergev1.OperationDecl) bool { return o.GetVerb() == verb })
}

// checkReactions applies the rules that concern reactions one by one, or
// pairs of reactions (M1, M2).
func (c *checker) checkReactions() {
	reactor := reactorIndex(c.m)
	hasComposer := composer(c.m)
	names := map[string]int{}
	triggers := map[string]int{}
	verbs := map[string]int{}
	for i, r := range c.m.GetReactions() {
		field, name, trig := reactionField(i), r.GetName(), r.GetTrigger()

		if first, dup := names[name]; dup {
			c.add(field+".name", name, RuleUniqueReactionNames, "name %q is already used by %s", name, reactionField(first))
		} else {
			names[name] = i
		}
		if trig == trigger.Operation {
			if verb := r.GetVerb(); verb != "" {
				if first, dup := verbs[verb]; dup {
					c.add(field+".verb", name, RuleOneReactionPerTrigger, "verb %q already has a reaction: %s %q", verb, reactionField(first), c.m.GetReactions()[first].GetName())
				} else {
					verbs[verb] = i
				}
			}
		} else if first, dup := triggers[trig]; dup {
			c.add(field+".trigger", name, RuleOneReactionPerTrigger, "a kind has at most one %s reaction; %s %q already has it", trig, reactionField(first), c.m.GetReactions()[first].GetName())
		} else {
			triggers[trig] = i
		}

		if reactor >= 0 && trig != trigger.Reactor {
			c.add(field, name, RuleReactorKindAlone, "a reactor kind has only its reactor reaction, and %s %q makes this a reactor kind; serve this reaction from another kind", reactionField(reactor), c.m.GetReactions()[reactor].GetName())
		}
		c.checkTrigger(i, r, hasComposer)
		c.checkEmits(i, r)
	}
}

// checkTrigger applies the rules that tie a reaction's trigger to the rest
// of the manifest.
func (c *checker) checkTrigger(i int, r *convergev1.Reaction, hasComposer bool) {
	field, name := reactionField(i), r.GetName()
	switch r.GetTrigger() {
	case trigger.DeleteRequested:
		if c.m.GetFinalizer() == "" {
			c.add(field, name, RuleDeleteNeedsFinalizer, "deleteRequested needs the manifest's finalizer")
		}
		if !emits(r, EmitFinalizer) {
			c.add(field+".emits", name, RuleDeleteEmitsFinalizer, "deleteRequested must emit finalizer: the resource is removed only when its finalizer is cleared")
		}
	case trigger.ChildrenSettled:
		if !hasComposer {
			c.add(field, name, RuleSettledNeedsComposer, "childrenSettled needs a composer, but no specChange reaction emits children")
		}
	case trigger.SpecChange:
		if !emits(r, EmitStatus) && !emits(r, EmitChildren) {
			c.add(field+".emits", name, RuleSpecChangeEmitsResult, "a specChange reaction must emit status (a leaf) or children (a composer)")
		}
	case trigger.Resync:
		if c.m.GetPolicy().GetResyncIntervalSeconds() <= 0 {
			c.add(field, name, RuleResyncNeedsInterval, "resync needs policy.resync_interval_seconds > 0, or it never fires")
		}
	}
	verb := r.GetVerb()
	switch {
	case r.GetTrigger() != trigger.Operation && verb != "":
		c.add(field+".verb", name, RuleVerbOnlyOnOperation, "verb is set only on operation reactions, not on %s", r.GetTrigger())
	case r.GetTrigger() == trigger.Operation && verb == "":
		c.add(field+".verb", name, RuleOperationNeedsVerb, "an operation reaction must name the verb it implements")
	case r.GetTrigger() == trigger.Operation && !declaredVerb(c.m, verb):
		c.add(field+".verb", name, RuleVerbDeclared, "verb %q is not declared in operations[]", verb)
	}
}

// checkEmits applies the rules on what a reaction may emit. Each emitted
// part is blamed on one rule only: the trigger's own restriction first,
// then the rule of the part.
func (c *checker) checkEmits(i int, r *convergev1.Reaction) {
	field, name, trig := reactionField(i)+".emits", r.GetName(), r.GetTrigger()
	recomposes := trig == trigger.Resync && c.m.GetPolicy().GetResyncRecomposes()
	mayCompose := trig == trigger.SpecChange || recomposes
	for _, e := range r.GetEmits() {
		switch {
		case trig == trigger.Reactor && e != EmitSideEffect:
			c.add(field, name, RuleReactorEmitsSideEffectOnly, "a reactor reaction emits only sideEffect, not %s", e)
		case trig == trigger.ChildrenSettled && e != EmitStatus && e != EmitConditions:
			c.add(field, name, RuleSettledEmitsStatusOnly, "childrenSettled emits only status and conditions, not %s", e)
		case trig == trigger.Observe && e != EmitStatus && e != EmitConditions:
			c.add(field, name, RuleObserveEmitsStatusOnly, "observe emits only status and conditions, not %s: an observed resource is never changed", e)
		case e == EmitSideEffect && trig != trigger.Reactor:
			c.add(field, name, RuleSideEffectOnlyFromReactor, "only a reactor reaction may emit sideEffect")
		case e == EmitFinalizer && trig != trigger.DeleteRequested:
			c.add(field, name, RuleFinalizerOnlyFromDelete, "only a deleteRequested reaction may emit finalizer")
		case e == EmitOperationOutput && trig != trigger.Operation:
			c.add(field, name, RuleOutputOnlyFromOperation, "only an operation reaction may emit operationOutput")
		case (e == EmitChildren || e == EmitEdges || e == EmitConfigs) && !mayCompose:
			c.add(field, name, RuleChildrenOnlyFromSpecChange, "only specChange may emit %s (and resync, when policy.resync_recomposes is set)", e)
		}
	}
	if mayCompose && !emits(r, EmitChildren) {
		for _, e := range []string{EmitEdges, EmitConfigs} {
			if emits(r, e) {
				c.add(field, name, RuleEdgesNeedChildren, "emits %s without children: edges and configs belong to the children the same reaction emits", e)
			}
		}
	}
}

// checkKind applies the rules that concern the manifest as a whole.
func (c *checker) checkKind() {
	reactions := c.m.GetReactions()
	has := func(trigger string) bool {
		return slices.ContainsFunc(reactions, func(r *convergev1.Reaction) bool { return r.GetTrigger() == trigger })
	}
	observed := c.m.GetPolicy().GetManagementPolicy() == trigger.PolicyObserve
	if reactorIndex(c.m) < 0 && !has(trigger.SpecChange) && !(observed && has(trigger.Observe)) {
		c.add("reactions", "", RuleSpecChangeRequired, "no specChange reaction: every kind except a reactor kind needs one to act on its spec (or, with policy.management_policy observe, an observe reaction)")
	}
	if observed && !has(trigger.Observe) {
		c.add("policy.management_policy", "", RuleObservePolicyNeedsReaction, "management_policy is observe, but no reaction has trigger observe, so nothing would ever observe the kind's resources")
	}
	if f := c.m.GetFinalizer(); f != "" && !has(trigger.DeleteRequested) {
		c.add("finalizer", "", RuleFinalizerNeedsDelete, "finalizer %q is set, but no deleteRequested reaction clears it, so no resource could ever be deleted", f)
	}
	seen := map[string]int{}
	for j, op := range c.m.GetOperations() {
		field, verb := fmt.Sprintf("operations[%d].verb", j), op.GetVerb()
		if first, dup := seen[verb]; dup {
			c.add(field, "", RuleUniqueOperationVerbs, "verb %q is already declared by operations[%d]", verb, first)
			continue
		}
		seen[verb] = j
		served := slices.ContainsFunc(reactions, func(r *convergev1.Reaction) bool {
			return r.GetTrigger() == trigger.Operation && r.GetVerb() == verb
		})
		if !served {
			c.add(field, "", RuleOperationServed, "operation %q has no reaction; add a reaction with trigger operation and verb %q", verb, verb)
		}
	}
}
