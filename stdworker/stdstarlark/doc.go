// Package stdstarlark is the stdworker provider that serves a user kind
// whose composition is a Starlark program: a bundle of .star files in a
// directory, with load() between them. No SDK and no compile step: edit a
// file and the next task runs the new version.
//
// The bundle's main file (settings.main, default main.star) defines
//
//	def compose(ctx):
//	    net = child("network", ctx.name + "-net", {"cidr": ctx.spec["cidr"]})
//	    app = child("app", ctx.name + "-app", {"replicas": 2})
//	    return {
//	        "children": [net, app],
//	        "edges": [depends(app, net, flows = {"/status/id": "/spec/network_id"})],
//	        "status": {"children": 2},
//	    }
//
// and, for a kind with a childrenSettled reaction, rollup(ctx) returning a
// status. ctx has name, namespace, kind, version, generation, labels, spec,
// status and config (the effective provider config), and rollup for
// rollup(ctx). The helpers are child(kind, name, spec=None, version=1,
// labels=None), ref(kind, name, namespace="") for resources outside the
// composite, depends(dependent, dependency, flows={"/status/x": "/spec/y"},
// exprs={"/spec/y": "status.x + '/24'"}), plus json and struct.
//
// Programs are deterministic and sandboxed: no clock, no randomness, no I/O;
// load() reads only files inside the bundle. A run stops after
// settings.max_steps steps (default DefaultMaxSteps) and its output is
// bounded (children, edges, bytes); going past a limit, a syntax error or a
// runtime error fails the resource terminally with the file, line and
// column. See docs/stdworker-starlark.md.
package stdstarlark
