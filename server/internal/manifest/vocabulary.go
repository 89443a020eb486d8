package manifest

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
