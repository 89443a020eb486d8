package authz

// needs maps each ControlService method to what it needs of its caller.
// A method missing here needs admin: new RPCs fail closed.
var needs = map[string]Need{
	"GetKind": NeedRead, "ListKinds": NeedRead,
	"GetProviderConfig": NeedRead, "ListProviderConfigs": NeedRead,
	"GetReactorBinding": NeedRead, "ListReactorBindings": NeedRead,
	"GetResource": NeedRead, "ListResources": NeedRead,
	"GetResourceTree": NeedRead, "GetResourceGraph": NeedRead, "ExplainResource": NeedRead,
	"GetResourceHistory": NeedRead, "GetOperation": NeedRead,
	"ListTaskRecords": NeedRead, "GetTaskRecord": NeedRead,
	"ListOperations": NeedRead, "ListEvents": NeedRead, "Watch": NeedRead,
	"CountResources": NeedRead, "WhoAmI": NeedRead, "GetCluster": NeedRead,
	"GetRollout": NeedRead, "ListRollouts": NeedRead,

	"ApplyKind": NeedKindOwner, "DeleteKind": NeedKindOwner,
	"UpdateKindPolicy": NeedKindOwner, "ApplyProviderConfig": NeedKindOwner,
	"DeleteProviderConfig": NeedKindOwner, "ApplyReactorBinding": NeedKindOwner,
	"DeleteReactorBinding": NeedKindOwner,
	"StartRollout":         NeedKindOwner, "PauseRollout": NeedKindOwner, "ResumeRollout": NeedKindOwner,
	"AbortRollout": NeedKindOwner, "RollbackRollout": NeedKindOwner,

	"ApplyResource": NeedResourceWrite, "ApplyResources": NeedResourceWrite, "PlanChange": NeedResourceWrite,
	"DeleteResource": NeedResourceWrite, "RollbackResource": NeedResourceWrite,
	"QuarantineResource": NeedResourceWrite, "UnquarantineResource": NeedResourceWrite,
	"ReconcileResource": NeedResourceWrite, "InvokeOperation": NeedResourceWrite,
	"SetManagementPolicy": NeedResourceWrite,

	"SetLogLevel": NeedAdmin,

	"ReadResourceSecrets": NeedReadSecrets,
}

// Listed reports whether method has an entry in the needs map.
func Listed(method string) bool {
	_, ok := needs[method]
	return ok
}

// NeedOf returns what the ControlService method named method (short name,
// e.g. "ApplyKind") needs of its caller.
func NeedOf(method string) Need {
	if n, ok := needs[method]; ok {
		return n
	}
	return NeedAdmin
}
