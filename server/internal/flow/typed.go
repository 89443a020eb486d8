package flow

import (
	"context"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
)

// TypedEnv returns an environment in the flows' language whose variables
// have the given types, from provider (a schema-typed set such as
// celschema.Set over reg): for expressions checked against schemas
// before they run, such as a kind's conversion.
func TypedEnv(provider types.Provider, reg *types.Registry, vars map[string]*types.Type) (*cel.Env, error) {
	opts := languageOptions(provider, reg)
	for name, t := range vars {
		opts = append(opts, cel.Variable(name, t))
	}
	return cel.NewEnv(opts...)
}

// TypedProgram prepares a checked expression of a TypedEnv to run within
// CostLimit.
func TypedProgram(env *cel.Env, a *cel.Ast) (cel.Program, error) {
	return env.Program(a, programOptions...)
}

// RunTyped evaluates a TypedProgram under EvalTimeout and converts its
// value to decoded JSON, as a flow's value is.
func RunTyped(prg cel.Program, vars map[string]any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), EvalTimeout)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, vars)
	if err != nil {
		return nil, err
	}
	return toJSON(out)
}
