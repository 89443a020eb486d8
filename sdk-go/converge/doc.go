// Package converge is the Go SDK for writing Converge workers.
//
// A worker is a process that serves one or more reactions of one or more
// kinds. It dials the Converge server's WorkerService, holds one
// bidirectional stream, and runs a handler for every task the server pushes
// to it:
//
//	w := converge.NewWorker("http://localhost:7070", converge.WithCapacity(16))
//	w.Handle("greeting", 1, "reconcile", reconcileGreeting)
//	err := w.Run(ctx) // returns nil after a graceful drain once ctx is done
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
// spec changes.
package converge
