// Package trigger names what makes work run: the triggers of a kind's
// reactions and of the tasks in the queue. It is the one list of them; the
// manifest checker, the queue and the database (a CHECK constraint on
// tasks.trigger, tested against All) all use it.
package trigger

import "strings"

// Reaction triggers: when the engine asks a worker to act. A manifest's
// reactions name one of these.
const (
	SpecChange      = "specChange"
	ChildrenSettled = "childrenSettled"
	DeleteRequested = "deleteRequested"
	Operation       = "operation"
	Reactor         = "reactor"
	Resync          = "resync"
)

// Work the server does itself, queued beside workers' tasks.
const (
	// Rollup recomputes a composite from its children.
	Rollup = "rollup"
	// Gate checks a dependent's dependencies and writes flowed values.
	Gate = "gate"
	// Teardown moves a deleting resource on once what must go first is gone.
	Teardown = "teardown"
)

// OperationPrefix starts an operation task's trigger, followed by the
// verb: each verb is claimed for the worker serving it.
const OperationPrefix = Operation + ":"

// Reactions lists the reaction triggers, in the order the docs give them.
var Reactions = []string{SpecChange, ChildrenSettled, DeleteRequested, Operation, Reactor, Resync}

// Internal lists the server's own task triggers.
var Internal = []string{Rollup, Gate, Teardown}

// Queued lists every task trigger but operations' (which are
// OperationPrefix plus a verb): the reaction triggers a task runs under
// (every one but Operation) and the internal ones.
var Queued = []string{SpecChange, Resync, ChildrenSettled, DeleteRequested, Reactor, Rollup, Gate, Teardown}

// OfOperation returns the task trigger of an operation verb.
func OfOperation(verb string) string { return OperationPrefix + verb }

// IsOperation reports whether a task trigger is an operation's.
func IsOperation(t string) bool {
	return strings.HasPrefix(t, OperationPrefix) && len(t) > len(OperationPrefix)
}

// IsInternal reports whether a task trigger is the server's own work.
func IsInternal(t string) bool { return t == Rollup || t == Gate || t == Teardown }

// Reconciles reports whether a task of this trigger reconciles its
// resource: its result sets the resource's status and failure.
func Reconciles(t string) bool { return t == SpecChange || t == ChildrenSettled || t == Resync }
