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
	// Observe runs instead of specChange and resync for a resource whose
	// management policy is observe: it reports what exists and changes
	// nothing.
	Observe = "observe"
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
var Reactions = []string{SpecChange, ChildrenSettled, DeleteRequested, Operation, Reactor, Resync, Observe}

// Internal lists the server's own task triggers.
var Internal = []string{Rollup, Gate, Teardown}

// Queued lists every task trigger but operations' (which are
// OperationPrefix plus a verb): the reaction triggers a task runs under
// (every one but Operation) and the internal ones.
var Queued = []string{SpecChange, Resync, ChildrenSettled, DeleteRequested, Reactor, Rollup, Gate, Teardown, Observe}

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
func Reconciles(t string) bool {
	return t == SpecChange || t == ChildrenSettled || t == Resync || t == Observe
}

// Management policies: whether the engine manages a resource's external
// object (creates, updates and deletes it) or only observes it. The SQL
// function converge_observed (migrations/functions.sql) is the one place
// that picks a resource's effective policy, and with it the trigger of its
// reconcile work: Observe for an observed resource, else SpecChange (and
// Resync).
const (
	PolicyFull    = "full"
	PolicyObserve = "observe"
)

// Mutating lists the reaction triggers an observed resource never runs:
// they create, change or delete its external object.
var Mutating = []string{SpecChange, Resync, DeleteRequested}
