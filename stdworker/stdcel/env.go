package stdcel

import (
	"context"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"

	"github.com/convergehq/converge/internal/celschema"
)

// Limits on expressions. They match the server's value flows, so an
// expression the checker accepts also compiles where the server evaluates
// it.
const (
	// MaxExprLength is the longest expression, in characters, and the
	// longest flow expression stdcel sends the server.
	MaxExprLength = 4096
	// CostLimit caps one evaluation's work in CEL cost units.
	CostLimit = 1_000_000
	// MaxForEachItems caps the children one forEach resource expands to.
	MaxForEachItems = 256
	// evalTimeout stops an evaluation that is still running; expressions
	// within CostLimit do not reach it.
	evalTimeout = time.Second
)

// envOptions are the CEL environment's options: the same language the
// server's flows speak (standard library, optional types, strings, lists,
// sets, math, base64), with the graph's variables declared on top.
func envOptions(ts *celschema.Set) []cel.EnvOption {
	return []cel.EnvOption{
		cel.CustomTypeProvider(ts),
		cel.CustomTypeAdapter(jsonAdapter{base: ts.Base()}),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(ext.ListsMaxRangeSize(1000)),
		ext.Sets(),
		ext.Math(),
		ext.Encoders(),
		cel.DefaultUTCTimeZone(true),
		cel.ParserExpressionSizeLimit(MaxExprLength),
		// Rewriting an expression for the server prints it again, macros
		// (map, filter, ...) as written, which needs their calls recorded.
		cel.EnableMacroCallTracking(),
	}
}

// newEnv returns an environment declaring vars.
func newEnv(ts *celschema.Set, vars map[string]*types.Type) (*cel.Env, error) {
	opts := envOptions(ts)
	for _, name := range sortedKeys(vars) {
		opts = append(opts, cel.Variable(name, vars[name]))
	}
	return cel.NewEnv(opts...)
}

var programOptions = []cel.ProgramOption{
	cel.CostLimit(CostLimit),
	cel.InterruptCheckFrequency(100),
}

// eval runs prg over vars under the time limit.
func eval(prg cel.Program, vars map[string]any) (ref.Val, error) {
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	out, _, err := prg.ContextEval(ctx, vars)
	return out, err
}
