// Package stdcel is stdworker's CEL resource graph provider: kro's
// ResourceGraphDefinition, the Converge way.
//
// A graph is a resource of kind std.graph v1 (see Definition). It defines
// an instance kind and the resources each instance is made of; strings in
// their templates hold ${...} CEL expressions. ${schema.spec.x} reads the
// instance's inputs and ${db.status.y} another resource's status, which
// makes the reader depend on db and flows the value along that edge.
//
// Compile checks a graph the way a compiler would: every expression is
// parsed and type-checked against the instance's spec schema and the
// schemas of the kinds it reads, templates are matched against their
// kinds' spec schemas (unknown fields, type mismatches, missing required
// fields), ids are resolved and the references must form no cycle; every
// problem is reported with its graph path and, inside an expression, its
// line and column (see CheckError).
//
// Graph.Compose evaluates a graph for one instance: includeWhen filters
// resources (and whatever reads an excluded one), forEach expands a
// resource into one child per item (at most MaxForEachItems), templates
// are filled in with everything known when composing, and a value read
// from another resource becomes an edge with a value flow that the server
// evaluates over that resource's status and spec, gated by its readyWhen.
// Graph.Observe evaluates readyWhen over the children as they are and
// projects the graph's status onto the instance.
//
// New returns the provider: it serves std.graph (checking each graph,
// applying the kind it defines and serving that kind with provider.Env.Serve)
// and stops serving a kind when its graph is deleted. docs/stdworker-cel.md
// is the user's guide.
package stdcel
