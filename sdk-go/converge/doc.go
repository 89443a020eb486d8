// Package converge is the Go SDK for writing Converge workers.
//
// A worker is a process that serves one or more reactions of one or more
// kinds. It dials the Converge server's WorkerService, holds one
// bidirectional stream, and runs a handler for every task the server pushes
// to it:
//
//	w, err := converge.NewWorker("http://localhost:7070", converge.WithCapacity(16))
//	if err != nil {
//		return err // an invalid option or URL
//	}
//	w.Handle("greeting", 1, "reconcile", reconcileGreeting)
//	err = w.Run(ctx) // returns nil after a graceful drain once ctx is done
//
// An empty URL dials the server named by the CONVERGE_SERVER environment
// variable, as conctl and stdworker do, or http://localhost:7070.
//
// Handlers can be typed: [Handle] registers a [TypedHandlerFunc], which
// gets the spec decoded into a Go type ([TypedTask]) and reports a status
// of a Go type ([TypedResult], [StatusResult]). A spec that does not fit
// the type is a terminal failure naming the field, e.g. "spec.replicas:
// want integer, got string", and the handler is not called. The
// converge-go-types command (server/cmd/converge-go-types) generates the
// types from kind manifests, with constants for the kind, version,
// reactions and triggers and a typed Handle function per reaction:
//
//	HandleGreetingV1Reconcile(w, func(ctx context.Context, t *converge.TypedTask[GreetingV1Spec]) (*converge.TypedResult[GreetingV1Status], error) {
//		return converge.StatusResult(GreetingV1Status{Message: new("Hello, " + t.Spec.Name)}), nil
//	})
//
// The SDK takes care of the protocol: it subscribes with the registered
// reactions, never runs more than the configured capacity of handlers at
// once, attests running tasks with heartbeats, buffers results until the
// server acknowledges them, cancels handlers the server cancels, reconnects
// with exponential backoff (handlers keep running across reconnects and
// their results are delivered on the new stream), and drains gracefully.
//
// Handlers must be idempotent: a task can be delivered more than once (after
// a lease expires, for example). [Task.DedupToken] is stable across
// redeliveries of the same work and is meant to key side effects.
//
// A handler's error is transient (the server retries it with backoff) unless
// it is wrapped with [Terminal], which pins the resource as Failed until its
// spec changes. [Reason] attaches a machine-readable code (shown as the
// reason of the resource's conditions and counted in the server's metrics),
// and [RetryAfter] sets when a transient failure is retried instead of the
// backoff:
//
//	return nil, converge.RetryAfter(time.Minute, converge.Reason("Throttled", err))
//	return nil, converge.Terminal(converge.Reason("InvalidRegion", err))
//
// A panic is recovered and reported as a [PanicError]:
// transient for the first [PanicRetries] attempts, then terminal.
//
// [WithMiddleware] wraps handlers in [Middleware], for logging, tracing or
// metrics around every task.
//
// [CheckResult] and [RunHandler] put a handler's result through exactly the
// checks the worker applies before sending it, so a unit test sees the
// failure a live worker would report; package convergetest builds on them,
// with tasks made from a kind's manifest and an in-process server to test
// a whole worker against.
//
// A composer (a specChange reaction that emits children) returns its
// composite's whole desired set of children in [Result.Children], with
// [Result.Compose] set, and the [Edge]s among them: an edge makes a child
// wait for its dependency and flows values from the dependency's status
// into the child's spec ([DependsOn], [FlowFrom], [FlowExpr]). The SDK
// checks every child and edge before sending, so a mistake is a terminal
// failure naming it, and sends a large set in parts (any number of
// children, each message under about 1 MiB). A childrenSettled reaction
// reads the children's summary in [Task.Rollup].
//
// Provider configs are settings a kind's handlers need (an account, a
// region, the names of credentials), kept by the server per kind version:
// a default, and named configs a resource may use on top of it. A task
// carries its resource's effective config in [Task.Config]. The server
// pushes default configs to the worker when it connects and whenever an
// operator edits one: [WithOnConfig] sees every change, and
// [Worker.DefaultConfig] reads the current one. A reaction registered with
// [NeedsConfig] is reported not ready, so the server parks its resources,
// until its kind version has a default config; [Worker.SetReady] lets a
// handler report readiness itself, e.g. while a dependency is down.
//
// An operation reaction runs a verb an operator invoked on a resource: it
// reads [Task.Operation] and returns the verb's output in [Result.Output].
// A reactor reaction is told, in [Task.Reactor], that a resource it watches
// through a reactor binding went through a transition (created, synced,
// degraded, failed or deleted); it acts and returns a nil Result. Reactor
// events are delivered at least once: key side effects by
// [Task.DedupToken].
package converge
