package stdcel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// jsonAdapter presents decoded JSON to CEL the way the server's flows do:
// a whole number is a CEL int, any other number a double; objects and
// arrays are wrapped lazily.
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

const maxExactInt = 1 << 53

func floatValue(f float64) ref.Val {
	if f == math.Trunc(f) && math.Abs(f) <= maxExactInt {
		return types.Int(int64(f))
	}
	return types.Double(f)
}

func numberValue(n json.Number) ref.Val {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return types.Int(i)
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !(errors.Is(err, strconv.ErrRange) && !math.IsInf(f, 0)) {
		return types.NewErr("%q is not a number CEL can hold", string(n))
	}
	return floatValue(f)
}

// errNone is returned by toJSON for optional.none(): the value is absent.
var errNone = errors.New("optional.none()")

// maxDepth bounds the nesting of values an expression returns.
const maxDepth = 64

// toJSON turns a CEL result into plain decoded JSON (map[string]any, []any,
// string, bool, nil, json.Number).
func toJSON(v ref.Val) (any, error) {
	return toJSONDepth(v, 0)
}

func toJSONDepth(v ref.Val, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("the value nests deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(x), nil
	case types.Int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case types.Uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v has no JSON form", f)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case types.String:
		return string(x), nil
	case types.Timestamp, types.Duration:
		return string(x.ConvertToType(types.StringType).(types.String)), nil
	case *types.Optional:
		if !x.HasValue() {
			return nil, errNone
		}
		return toJSONDepth(x.GetValue(), depth+1)
	case *types.Err:
		return nil, x
	case *types.Unknown:
		return nil, errors.New("the value is not known yet")
	}
	if l, ok := v.(traits.Lister); ok {
		n, _ := l.Size().(types.Int)
		out := make([]any, 0, int(n))
		for i := types.Int(0); i < n; i++ {
			e, err := toJSONDepth(l.Get(i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	if m, ok := v.(traits.Mapper); ok {
		out := map[string]any{}
		for it := m.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("a map key is %s; JSON object keys are strings", k.Type())
			}
			e, err := toJSONDepth(m.Get(k), depth+1)
			if errors.Is(err, errNone) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out[string(ks)] = e
		}
		return out, nil
	}
	return nil, fmt.Errorf("a %s has no JSON form", v.Type())
}

// copyJSON deep-copies decoded JSON.
func copyJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	}
	return v
}

// sortedKeys returns m's keys in order, so everything built from a map is
// deterministic.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
