package manifest

// Reaction triggers: when the engine asks a worker to act.
const (
	TriggerSpecChange      = "specChange"
	TriggerChildrenSettled = "childrenSettled"
	TriggerDeleteRequested = "deleteRequested"
	TriggerOperation       = "operation"
	TriggerReactor         = "reactor"
	TriggerResync          = "resync"
)

// Reaction emits: which parts of a worker's answer the engine applies.
const (
	EmitChildren        = "children"
	EmitEdges           = "edges"
	EmitConfigs         = "configs"
	EmitStatus          = "status"
	EmitConditions      = "conditions"
	EmitFinalizer       = "finalizer"
	EmitOperationOutput = "operationOutput"
	EmitSideEffect      = "sideEffect"
)
