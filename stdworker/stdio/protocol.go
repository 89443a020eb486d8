package stdio

import "encoding/json"

// Protocol names the version of the protocol, in Request.Protocol and
// (optionally) Response.Protocol.
const Protocol = "converge.stdio/v1"

// Request is what the program reads on stdin: one JSON object, then end of
// file. Every field is always present except those marked omitted.
type Request struct {
	// Protocol is always "converge.stdio/v1".
	Protocol string `json:"protocol"`
	// Reaction is the reaction to run and what triggered it.
	Reaction Reaction `json:"reaction"`
	// Resource identifies the resource; omitted for a reactor (see Reactor).
	Resource *Resource `json:"resource,omitempty"`
	// Spec, Status and Config are JSON objects: the resource's spec, its
	// last applied status ({} before the first) and its effective provider
	// config ({} when there is none).
	Spec   json.RawMessage `json:"spec"`
	Status json.RawMessage `json:"status"`
	Config json.RawMessage `json:"config"`
	// RejectedStatus is the last status a run reported that the kind's
	// status_schema refused (a JSON object), omitted when there is none:
	// what the program said it created, for a teardown to remove.
	RejectedStatus json.RawMessage `json:"rejected_status,omitempty"`
	// Deadline is when the server gives up on this attempt (RFC 3339); the
	// program is killed then. Omitted when there is none.
	Deadline string `json:"deadline,omitempty"`
	// Attempt is 1 for the first attempt at this generation.
	Attempt int `json:"attempt"`
	// DedupToken is the same for every delivery of the same work: key side
	// effects by it.
	DedupToken string `json:"dedup_token"`
	// Preview is true when the request is a plan's preview: answer what
	// you would, and make no change outside Converge; the answer is never
	// applied. Omitted for real work.
	Preview bool `json:"preview,omitempty"`
	// ImportID names the existing object the resource adopts, omitted when
	// it names none: adopt it instead of creating one, and exit with
	// ExitImportNotFound when it does not exist.
	ImportID string `json:"import_id,omitempty"`
	// Rollup is the children's summary, for a childrenSettled reaction.
	Rollup *Rollup `json:"rollup,omitempty"`
	// Operation is the invoked verb, for an operation reaction.
	Operation *Operation `json:"operation,omitempty"`
	// Reactor is the watched resource's transition, for a reactor reaction.
	Reactor *Reactor `json:"reactor,omitempty"`
}

// Reaction names the reaction being run.
type Reaction struct {
	Name string `json:"name"`
	// Trigger is one of specChange, childrenSettled, deleteRequested,
	// operation, reactor, resync, observe (a resource whose management
	// policy is observe: report what exists, change nothing).
	Trigger string `json:"trigger"`
	// Emits lists what the engine takes from the response.
	Emits []string `json:"emits"`
}

// Resource identifies the resource a task is for.
type Resource struct {
	Kind       string            `json:"kind"`
	Version    int               `json:"version"`
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	UID        string            `json:"uid"`
	Generation int64             `json:"generation"`
	Labels     map[string]string `json:"labels"`
}

// Rollup counts a composite's children by phase.
type Rollup struct {
	Total       int       `json:"total"`
	Ready       int       `json:"ready"`
	Reconciling int       `json:"reconciling"`
	Degraded    int       `json:"degraded"`
	Failed      int       `json:"failed"`
	Deleting    int       `json:"deleting"`
	Excluded    int       `json:"excluded"`
	Culprits    []Culprit `json:"culprits"`
}

// Culprit is a descendant that keeps a composite from being Ready.
type Culprit struct {
	Resource Ref    `json:"resource"`
	Phase    string `json:"phase"`
	Message  string `json:"message"`
	Path     []Ref  `json:"path"`
}

// Operation is an invoked verb and its input (a JSON object).
type Operation struct {
	ID    string          `json:"id"`
	Verb  string          `json:"verb"`
	Input json.RawMessage `json:"input"`
}

// Reactor is what a reactor binding saw happen to a watched resource.
type Reactor struct {
	Binding    string `json:"binding"`
	Transition string `json:"transition"`
	Watched    Ref    `json:"watched"`
	// WatchedVersion, WatchedGeneration, WatchedPhase and WatchedStatus
	// describe the watched resource when it happened.
	WatchedVersion    int             `json:"watched_version"`
	WatchedGeneration int64           `json:"watched_generation"`
	WatchedPhase      string          `json:"watched_phase"`
	WatchedStatus     json.RawMessage `json:"watched_status"`
}

// Ref names a resource; an empty namespace means the composite's own.
type Ref struct {
	Namespace string `json:"namespace,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

// Response is what the program prints on stdout when it exits 0: one JSON
// object (empty output means {}). Unknown fields are refused, so a typo is a
// terminal error instead of a silent no-op.
type Response struct {
	// Protocol, if given, must be "converge.stdio/v1".
	Protocol string `json:"protocol,omitempty"`
	// Status becomes the resource's status: a JSON object satisfying the
	// kind's status_schema. Absent or null leaves the status as it was.
	Status json.RawMessage `json:"status,omitempty"`
	// Unhealthy makes the resource Degraded.
	Unhealthy bool `json:"unhealthy,omitempty"`
	// Conditions explain the resource's state.
	Conditions []Condition `json:"conditions,omitempty"`
	// Children is a composer's complete desired child set; required from a
	// reaction that emits children ([] prunes them all), refused from
	// others.
	Children *[]Child `json:"children,omitempty"`
	// Edges are dependencies among the children, with value flows.
	Edges []Edge `json:"edges,omitempty"`
	// References are resources outside the composite that edges may name.
	References []Ref `json:"references,omitempty"`
	// Output is an operation's output, a JSON object; operation reactions
	// only.
	Output json.RawMessage `json:"output,omitempty"`
}

// Condition is one observation about the resource.
type Condition struct {
	Type string `json:"type"`
	// Status is "True", "False" or "Unknown".
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Child is one resource of a composer's desired set.
type Child struct {
	Kind    string            `json:"kind"`
	Version int               `json:"version"`
	Name    string            `json:"name"`
	Labels  map[string]string `json:"labels,omitempty"`
	Spec    json.RawMessage   `json:"spec,omitempty"`
}

// Edge makes Dependent wait for Dependency and flows values between them.
type Edge struct {
	Dependent  Ref    `json:"dependent"`
	Dependency Ref    `json:"dependency"`
	Flows      []Flow `json:"flows,omitempty"`
}

// Flow copies a value from the dependency's status (From, a JSON pointer, or
// Expr, a CEL expression over status and spec) to the dependent's spec at To.
type Flow struct {
	From string `json:"from,omitempty"`
	Expr string `json:"expr,omitempty"`
	To   string `json:"to"`
}
