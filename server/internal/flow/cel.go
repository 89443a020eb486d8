package flow

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/checker"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// Limits on CEL flows. They bound the time one flow may cost the server
// however hostile its expression or large its inputs.
const (
	// MaxExprLength is the longest expression Compile accepts, in
	// characters; Flow.expr in the worker protocol has the same limit.
	MaxExprLength = 4096
	// CostLimit caps the work of one evaluation, in CEL cost units: about
	// one per operation, plus one per element or character that a list or
	// string operation goes through (see cel.CostLimit). A flow that reads
	// and combines a few fields costs well under 100.
	CostLimit = 1_000_000
	// MaxLoopIterations caps the iterations of all comprehensions (all,
	// exists, exists_one, map, filter, sortBy) in one evaluation, counted
	// as the sizes of the lists and maps they range over. It is also the
	// longest list lists.range builds.
	MaxLoopIterations = 1_000
	// EvalTimeout stops an evaluation with loops still running after this
	// long. It is a safety net that expressions within the limits above do
	// not reach.
	EvalTimeout = time.Second
)

// interruptEvery is how many comprehension iterations run between checks
// of EvalTimeout.
const interruptEvery = 100

// jsonObject is the declared type of status and spec: JSON objects whose
// values are checked when the flow runs.
var jsonObject = cel.MapType(cel.StringType, cel.DynType)

// celEnv is built once: building an environment costs far more than
// compiling an expression in it, and an Env is safe for concurrent use.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	reg, err := types.NewRegistry()
	if err != nil {
		return nil, err
	}
	return cel.NewEnv(append(languageOptions(reg, reg),
		cel.Variable("status", jsonObject),
		cel.Variable("spec", jsonObject))...)
})

// languageOptions are the language every server-side expression speaks:
// the standard library, optional types, strings, lists, sets, math and
// base64, over decoded JSON, within the size limit.
func languageOptions(provider types.Provider, reg *types.Registry) []cel.EnvOption {
	return []cel.EnvOption{
		cel.CustomTypeProvider(provider),
		cel.CustomTypeAdapter(jsonAdapter{base: reg}),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Lists(ext.ListsMaxRangeSize(MaxLoopIterations)),
		ext.Sets(),
		ext.Math(),
		ext.Encoders(),
		cel.DefaultUTCTimeZone(true),
		cel.ParserExpressionSizeLimit(MaxExprLength),
	}
}

// programOptions apply to every compiled flow.
var programOptions = []cel.ProgramOption{
	cel.CostLimit(CostLimit),
	cel.InterruptCheckFrequency(interruptEvery),
	cel.EvalOptions(cel.OptOptimize),
}

// jsonAdapter presents decoded JSON to CEL. Whole numbers become CEL ints
// and other numbers doubles, whatever the decoder produced (json.Number or
// float64), so `status.replicas + 1` works. Objects and arrays are wrapped
// lazily: only the parts an expression touches are converted.
type jsonAdapter struct {
	base types.Adapter
}

// NativeToValue implements types.Adapter.
func (a jsonAdapter) NativeToValue(v any) ref.Val {
	switch x := v.(type) {
	case json.Number:
		return numberValue(x)
	case float64:
		return floatValue(x)
	case map[string]any:
		return types.NewStringInterfaceMap(a, x)
	case []any:
		return types.NewDynamicList(a, x)
	}
	return a.base.NativeToValue(v)
}

// maxExactInt is the largest magnitude below which every whole float64 is
// exact.
const maxExactInt = 1 << 53

func floatValue(f float64) ref.Val {
	if f == math.Trunc(f) && math.Abs(f) <= maxExactInt {
		return types.Int(int64(f))
	}
	return types.Double(f)
}

func numberValue(n json.Number) ref.Val {
	s := string(n)
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return types.Int(i)
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err == nil:
	case errors.Is(err, strconv.ErrRange) && !math.IsInf(f, 0):
		// Too small: it rounds to zero, as JSON decoders do.
	case errors.Is(err, strconv.ErrRange):
		return types.NewErr("number %s is beyond the range of a CEL double", s)
	default:
		return types.NewErr("%q is not a number", s)
	}
	return floatValue(f)
}

// unknownSizes leaves every input size unknown (from empty to huge), for
// estimates of what an expression costs at the least.
type unknownSizes struct{}

// EstimateSize implements checker.CostEstimator.
func (unknownSizes) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return nil
}

// EstimateCallCost implements checker.CostEstimator; the library's own
// estimates apply.
func (unknownSizes) EstimateCallCost(string, string, *checker.AstNode, []checker.AstNode) *checker.CallEstimate {
	return nil
}

// vars binds status and spec without allocating a map per evaluation,
// and counts the evaluation's loop iterations.
type vars struct {
	status, spec any
	iterations   int64
}

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	switch name {
	case "status":
		return v.status, true
	case "spec":
		return v.spec, true
	case budgetName:
		return v, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (v *vars) Parent() interpreter.Activation {
	return nil
}
