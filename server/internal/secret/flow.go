package secret

import (
	"fmt"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/schema"
)

// FlowSchemas are the schemas a flow's secrecy is checked against: the
// dependency's status and spec schemas, the dependent's spec schema, and
// names for messages ("data.db v1").
type FlowSchemas struct {
	Dependency, Dependent            string
	DependencyStatus, DependencySpec *schema.Schema
	DependentSpec                    *schema.Schema
}

// CheckFlow is the rule for secrets in flows: a flow that reads a secret
// of its dependency (a pointer at, above or under a secret property of
// the status; an expression selecting one of the status or the spec)
// must write a secret property of its dependent's spec, so the value
// stays sealed. The error names both paths.
func CheckFlow(p *flow.Program, s FlowSchemas) error {
	to := p.Target()
	if s.DependentSpec.IsSecret(to) {
		return nil
	}
	for _, r := range p.Reads() {
		sch, field := s.DependencyStatus, "status"
		if r.Root == "spec" {
			sch, field = s.DependencySpec, "spec"
		}
		for _, sp := range sch.Secrets() {
			if sp.Overlaps(r.Tokens) {
				return fmt.Errorf("the flow reads %s %s of %s, which is or holds the secret %s, but writes %s of %s's spec, which is not secret: a secret flows only into a secret property (mark %s writeOnly or %s)",
					field, schema.DisplayPointer(schema.JoinPointer("", r.Tokens...)), s.Dependency, sp,
					schema.DisplayPointer(schema.JoinPointer("", to...)), s.Dependent,
					schema.DisplayPointer(schema.JoinPointer("", to...)), schema.SecretKeyword)
			}
		}
	}
	return nil
}
