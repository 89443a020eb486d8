package flow

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/convergehq/converge/server/internal/limits"

	"github.com/convergehq/converge/server/internal/schema"
)

// maxResultDepth bounds the nesting of a result, so converting it cannot
// exhaust the stack; a spec nested this deep would fail validation anyway.
const maxResultDepth = 64

// errNoValue marks an optional.none() in a result.
type errNoValue struct{ path []string }

func (e *errNoValue) Error() string {
	if len(e.path) == 0 {
		return "the result is optional.none()"
	}
	return "the result's " + schema.JoinPointer("", e.path...) + " is optional.none()"
}

// converter turns a CEL value into decoded JSON, keeping count of the
// approximate JSON size so a result built from shared parts (a list
// holding the same big list many times) cannot blow up in memory.
type converter struct {
	left int // bytes of JSON the result may still take
}

// resultError is a result with no JSON form; path locates the part.
type resultError struct {
	path    []string
	message string
}

func (e *resultError) Error() string {
	if len(e.path) == 0 {
		return "the result " + e.message
	}
	return "the result's " + schema.JoinPointer("", e.path...) + " " + e.message
}

// toJSON converts a CEL result. Numbers become json.Number: ints and uints
// exactly, doubles in their shortest round-trip form. Timestamps and
// durations become the strings CEL's string() gives (RFC 3339 and "1.5s").
// Bytes, types and non-finite doubles have no JSON form and are errors. An
// optional with a value becomes the value; optional.none() is errNoValue.
func toJSON(v ref.Val) (any, error) {
	c := converter{left: limits.MaxSpecBytes}
	return c.convert(v, nil)
}

func (c *converter) spend(n int, path []string) error {
	c.left -= n
	if c.left < 0 {
		return &resultError{nil, fmt.Sprintf("is larger than %d bytes as JSON, the spec size limit", limits.MaxSpecBytes)}
	}
	return nil
}

func (c *converter) convert(v ref.Val, path []string) (any, error) {
	if len(path) > maxResultDepth {
		return nil, &resultError{path, fmt.Sprintf("nests deeper than %d levels", maxResultDepth)}
	}
	switch x := v.(type) {
	case nil:
		return nil, &resultError{path, "is missing"}
	case types.Null:
		return nil, c.spend(4, path)
	case types.Bool:
		return bool(x), c.spend(5, path)
	case types.Int:
		s := strconv.FormatInt(int64(x), 10)
		return json.Number(s), c.spend(len(s), path)
	case types.Uint:
		s := strconv.FormatUint(uint64(x), 10)
		return json.Number(s), c.spend(len(s), path)
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &resultError{path, fmt.Sprintf("is %v, which is not a JSON number", f)}
		}
		s := strconv.FormatFloat(f, 'g', -1, 64) // shortest round-trip form
		return json.Number(s), c.spend(len(s), path)
	case types.String:
		return string(x), c.spend(len(x)+2, path)
	case types.Bytes:
		return nil, &resultError{path, "is bytes, which JSON cannot hold; convert with base64.encode(...) or string(...)"}
	case types.Duration, types.Timestamp:
		s, ok := x.ConvertToType(types.StringType).(types.String)
		if !ok {
			return nil, &resultError{path, fmt.Sprintf("is a %s that cannot be written as a string", x.Type().TypeName())}
		}
		return string(s), c.spend(len(s)+2, path)
	case *types.Optional:
		if !x.HasValue() {
			return nil, &errNoValue{path}
		}
		return c.convert(x.GetValue(), path)
	case traits.Mapper:
		return c.object(x, path)
	case traits.Lister:
		return c.array(x, path)
	}
	return nil, &resultError{path, fmt.Sprintf("has type %s, which JSON cannot hold", v.Type().TypeName())}
}

func (c *converter) object(m traits.Mapper, path []string) (any, error) {
	if err := c.spend(2, path); err != nil {
		return nil, err
	}
	var keys []string
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		s, ok := k.(types.String)
		if !ok {
			return nil, &resultError{path, fmt.Sprintf("is a map with a key of type %s (%v); JSON object keys are strings", k.Type().TypeName(), k)}
		}
		if err := c.spend(len(s)+4, path); err != nil {
			return nil, err
		}
		keys = append(keys, string(s))
	}
	// Sorted, so the same result always fails at the same key.
	slices.Sort(keys)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		v, err := c.convert(m.Get(types.String(k)), append(slices.Clip(path), k))
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (c *converter) array(l traits.Lister, path []string) (any, error) {
	n, ok := l.Size().(types.Int)
	if !ok {
		return nil, &resultError{path, "is a list of unknown size"}
	}
	if err := c.spend(2+int(n), path); err != nil {
		return nil, err
	}
	out := make([]any, 0, int(n))
	for i := types.Int(0); i < n; i++ {
		ipath := append(slices.Clip(path), strconv.Itoa(int(i)))
		v, err := c.convert(l.Get(i), ipath)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// copyJSON returns a deep copy of a decoded JSON value, so a value flowed
// into a spec shares nothing with the status it came from.
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
