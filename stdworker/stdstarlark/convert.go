package stdstarlark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
)

// maxDepth is how deeply values may nest, as the server allows in specs
// and statuses.
const maxDepth = 64

// maxNumberLen is the longest number (in characters) the server accepts.
const maxNumberLen = 128

// toJSON converts a Starlark value a program returned into JSON. path names
// the value in errors (e.g. `child "web" spec.ports[0]`). Only what JSON can
// say is accepted: None, bools, ints, finite floats, UTF-8 strings, lists
// and tuples, dicts with string keys, and structs.
func toJSON(v starlark.Value, path string) (json.RawMessage, error) {
	x, err := toGo(v, path, 0)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// toGo converts v into values encoding/json marshals deterministically
// (maps marshal with sorted keys).
func toGo(v starlark.Value, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested more than %d levels deep", path, maxDepth)
	}
	switch v := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(v), nil
	case starlark.Int:
		s := v.String()
		if len(s) > maxNumberLen {
			return nil, fmt.Errorf("%s: integer of %d digits; at most %d characters", path, len(s), maxNumberLen)
		}
		return json.Number(s), nil
	case starlark.Float:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %v is not a JSON number", path, v)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	case starlark.String:
		s := string(v)
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%s: string is not valid UTF-8", path)
		}
		return s, nil
	case *starlark.List:
		return seqToGo(v, v.Len(), path, depth)
	case starlark.Tuple:
		return seqToGo(v, v.Len(), path, depth)
	case *starlark.Dict:
		out := make(map[string]any, v.Len())
		for _, item := range v.Items() {
			k, ok := item[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("%s: dict key %s is a %s; JSON object keys are strings", path, item[0].String(), item[0].Type())
			}
			if !utf8.ValidString(string(k)) {
				return nil, fmt.Errorf("%s: dict key %q is not valid UTF-8", path, string(k))
			}
			x, err := toGo(item[1], childPath(path, string(k)), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(k)] = x
		}
		return out, nil
	case *starlarkstruct.Struct:
		names := v.AttrNames()
		out := make(map[string]any, len(names))
		for _, name := range names {
			fv, err := v.Attr(name)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", path, name, err)
			}
			x, err := toGo(fv, childPath(path, name), depth+1)
			if err != nil {
				return nil, err
			}
			out[name] = x
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%s: a %s cannot be turned into JSON", path, v.Type())
	}
}

// seqToGo converts a list or tuple.
func seqToGo(seq starlark.Indexable, n int, path string, depth int) (any, error) {
	out := make([]any, n)
	for i := range n {
		x, err := toGo(seq.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// childPath extends a path with an object key.
func childPath(path, key string) string {
	if isIdent(key) {
		return path + "." + key
	}
	return fmt.Sprintf("%s[%q]", path, key)
}

// isIdent reports whether s reads well after a dot.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// fromJSON converts JSON (a spec, a config, a status) into frozen Starlark
// values: objects become dicts with their keys sorted, so a program sees
// the same order whatever order the JSON had; integers become ints, other
// numbers floats. Empty input is an empty dict.
func fromJSON(raw json.RawMessage) (starlark.Value, error) {
	if len(raw) == 0 {
		d := starlark.NewDict(0)
		d.Freeze()
		return d, nil
	}
	var x any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&x); err != nil {
		return nil, err
	}
	v := fromGo(x)
	v.Freeze()
	return v, nil
}

// fromGo converts a decoded JSON value.
func fromGo(x any) starlark.Value {
	switch x := x.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(x)
	case json.Number:
		if i, ok := new(big.Int).SetString(string(x), 10); ok {
			return starlark.MakeBigInt(i)
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			// Out of float range: JSON allows it, Starlark has no such number.
			return starlark.String(string(x))
		}
		return starlark.Float(f)
	case string:
		return starlark.String(x)
	case []any:
		elems := make([]starlark.Value, len(x))
		for i, e := range x {
			elems[i] = fromGo(e)
		}
		return starlark.NewList(elems)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		d := starlark.NewDict(len(x))
		for _, k := range keys {
			_ = d.SetKey(starlark.String(k), fromGo(x[k]))
		}
		return d
	default:
		return starlark.None
	}
}
