package schema

import (
	"strconv"
)

// propertyNamesPath finds the object a propertyNames violation belongs to.
//
// jsonschema/v6.0.3 records a propertyNames error with a location slice
// that shares its backing array with the validator's cursor, so sibling
// values visited later overwrite it: only its length is reliable. The
// object is recovered from the instance: the objects at that depth that
// have the offending property. If only one object qualifies it is the
// answer; otherwise the longest common prefix of the candidates is
// reported, which is vague but never wrong (and, unlike the recorded
// path, does not depend on map iteration order).
func propertyNamesPath(instance any, recorded []string, property string) []string {
	var candidates [][]string
	objectsWithKey(instance, nil, len(recorded), property, &candidates)
	if len(candidates) == 0 {
		return nil
	}
	prefix := candidates[0]
	for _, c := range candidates[1:] {
		n := 0
		for n < len(prefix) && n < len(c) && prefix[n] == c[n] {
			n++
		}
		prefix = prefix[:n]
	}
	return prefix
}

func objectsWithKey(v any, path []string, depth int, key string, out *[][]string) {
	if len(path) == depth {
		if obj, ok := v.(map[string]any); ok {
			if _, ok := obj[key]; ok {
				*out = append(*out, path)
			}
		}
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, item := range x {
			objectsWithKey(item, child(path, k), depth, key, out)
		}
	case []any:
		for i, item := range x {
			objectsWithKey(item, child(path, strconv.Itoa(i)), depth, key, out)
		}
	}
}
