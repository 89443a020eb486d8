package converge

// Child is one resource a composer wants in its composite. The child lives
// in the composite's namespace and is owned by it: the server creates it,
// rewrites its spec when the composer's answer changes, and prunes it once
// the composer stops emitting it.
//
// A child that breaks a rule below is reported as a terminal failure of the
// compose naming the child, e.g. `children[3] "vpc-1": name: ...`.
type Child struct {
	// Kind names the child's kind: lower-case words separated by '.' or
	// '-', at most 63 characters, e.g. "aws.vpc".
	Kind string
	// KindVersion is the child's kind version, 1 to 32767.
	KindVersion int
	// Name identifies the child among the resources of its kind in the
	// namespace: 1 to 253 characters, lower-case letters, digits, '.', '_'
	// and '-', starting and ending with a letter or digit.
	Name string
	// Labels are at most 64 key/value pairs; keys are 1 to 253 characters
	// of letters, digits, '.', '_', '/' and '-' (starting and ending with a
	// letter or digit), values at most 253 characters.
	Labels map[string]string
	// Spec is the child's spec. It must marshal (with encoding/json) to a
	// JSON object of at most 512 KiB; nil means an empty spec. Value flows
	// of edges whose dependent is this child write into it.
	Spec any
}

// Ref returns a reference to the child, for use in an [Edge].
func (c Child) Ref() Ref { return Ref{Kind: c.Kind, Name: c.Name} }

// Ref names a resource: a child of the composition, or a resource outside
// it listed in [Result.References].
type Ref struct {
	// Namespace is the resource's namespace; "" means the composite's own.
	Namespace string
	Kind      string
	Name      string
}

// RefTo returns a reference to the resource of the given kind and name in
// the composite's namespace.
func RefTo(kind, name string) Ref { return Ref{Kind: kind, Name: name} }

// Edge makes Dependent depend on Dependency: the server schedules the
// dependent only once the dependency is synced, and each of Flows copies a
// value from the dependency into the dependent's spec, before the dependent
// runs and again whenever the value changes.
//
// The dependent must be a child of the composition (its Ref has no
// Namespace); the dependency is a child or one of [Result.References]. The server refuses edges to unknown
// resources and edge cycles, failing the compose with a message naming
// them.
type Edge struct {
	Dependent  Ref
	Dependency Ref
	// Flows are at most 32 value flows; see [FlowFrom] and [FlowExpr].
	Flows []Flow
}

// DependsOn returns an edge making dependent wait for dependency, with the
// given value flows.
//
//	converge.DependsOn(vpc.Ref(), account.Ref(), converge.FlowFrom("/account_id", "/account_id"))
func DependsOn(dependent, dependency Ref, flows ...Flow) Edge {
	return Edge{Dependent: dependent, Dependency: dependency, Flows: flows}
}

// Flow copies one value from an edge's dependency into its dependent's
// spec. Exactly one of From and Expr is set.
type Flow struct {
	// From is a JSON pointer (RFC 6901) into the dependency's status, e.g.
	// "/account_id". While the value is missing the dependent waits, with
	// a condition naming the field.
	From string
	// Expr is a CEL expression over the dependency's status and spec, e.g.
	// `status.cidr + "/24"`; at most 4096 characters. The server compiles
	// and evaluates it.
	Expr string
	// To is a JSON pointer into the dependent's spec where the value goes,
	// e.g. "/account_id".
	To string
}

// FlowFrom returns a flow copying the dependency's status value at the JSON
// pointer from to the dependent's spec at the JSON pointer to.
func FlowFrom(from, to string) Flow { return Flow{From: from, To: to} }

// FlowExpr returns a flow writing the value of the CEL expression expr,
// evaluated over the dependency's status and spec, to the dependent's spec
// at the JSON pointer to.
func FlowExpr(expr, to string) Flow { return Flow{Expr: expr, To: to} }
