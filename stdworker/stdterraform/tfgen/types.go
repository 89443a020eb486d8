package tfgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// maxNesting bounds how deep types and blocks may nest: the server's
// schemas may nest 64 levels, and each level here costs up to two.
const maxNesting = 24

// mapError is a part of a schema the generator cannot map; path names the
// attribute or block ("spec.rule[].filter.prefix").
type mapError struct {
	path, why string
}

func (e *mapError) Error() string { return e.path + ": " + e.why }

// side says which schema a block is mapped into: the spec takes what a
// user may set, the status what terraform computes.
type side int

const (
	specSide side = iota
	statusSide
)

// blockSchema maps a block to the JSON Schema of an object: for the spec
// its arguments (required and optional attributes, nested blocks with
// their min/max items), for the status its computed attributes.
func blockSchema(b *Block, path string, s side, depth int) (map[string]any, error) {
	if depth > maxNesting {
		return nil, &mapError{path, fmt.Sprintf("nests deeper than %d levels", maxNesting)}
	}
	props := map[string]any{}
	var required []string
	if b != nil {
		for _, name := range sortedKeys(b.Attributes) {
			a := b.Attributes[name]
			if a == nil {
				return nil, &mapError{join(path, name), "attribute is null"}
			}
			inSpec := a.Required || a.Optional
			if (s == specSide && !inSpec) || (s == statusSide && (!a.Computed || a.Sensitive || a.WriteOnly)) {
				// A sensitive or write-only value never reaches the
				// server: the status leaves it out.
				continue
			}
			if !a.Required && !a.Optional && !a.Computed {
				return nil, &mapError{join(path, name), "is neither required, optional nor computed"}
			}
			sch, err := attributeSchema(a, join(path, name), s, depth+1)
			if err != nil {
				return nil, err
			}
			props[name] = sch
			if s == specSide && a.Required {
				required = append(required, name)
			}
		}
		if s == specSide {
			for _, name := range sortedKeys(b.BlockTypes) {
				bt := b.BlockTypes[name]
				if _, dup := props[name]; dup {
					return nil, &mapError{join(path, name), "is both an attribute and a block"}
				}
				sch, min, err := blockTypeSchema(bt, join(path, name), depth+1)
				if err != nil {
					return nil, err
				}
				props[name] = sch
				if min > 0 {
					required = append(required, name)
				}
			}
		}
	}
	out := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		out["required"] = required
	}
	return out, nil
}

// attributeSchema maps one attribute: its type, or its nested attributes.
func attributeSchema(a *Attribute, path string, s side, depth int) (map[string]any, error) {
	var out map[string]any
	var err error
	switch {
	case a.NestedType != nil:
		out, err = nestedSchema(a.NestedType, path, s, depth)
	case len(bytes.TrimSpace(a.Type)) == 0:
		return nil, &mapError{path, "has neither a type nor nested attributes"}
	default:
		out, err = typeSchema(a.Type, path, depth)
	}
	if err != nil {
		return nil, err
	}
	annotate(out, a.Description, a.Deprecated, s == specSide && (a.Sensitive || a.WriteOnly))
	return out, nil
}

// nestedSchema maps a plugin-framework nested attribute.
func nestedSchema(n *NestedType, path string, s side, depth int) (map[string]any, error) {
	// A nested attribute's inner attributes are all set or all computed
	// with it, so they are mapped as a block of their own on the same side,
	// with every inner attribute kept.
	inner := &Block{Attributes: n.Attributes}
	obj, err := blockSchema(inner, path, specSide, depth)
	if err != nil {
		return nil, err
	}
	if s == statusSide {
		delete(obj, "required")
	}
	return nesting(obj, n.NestingMode, n.MinItems, n.MaxItems, path)
}

// blockTypeSchema maps a nested block and returns its min_items, which
// makes it required.
func blockTypeSchema(bt *BlockType, path string, depth int) (map[string]any, uint64, error) {
	if bt == nil {
		return nil, 0, &mapError{path, "block is null"}
	}
	obj, err := blockSchema(bt.Block, path, specSide, depth)
	if err != nil {
		return nil, 0, err
	}
	if bt.Block != nil {
		annotate(obj, bt.Block.Description, bt.Block.Deprecated, false)
	}
	out, err := nesting(obj, bt.NestingMode, bt.MinItems, bt.MaxItems, path)
	return out, bt.MinItems, err
}

// nesting wraps an object schema as a nesting mode asks.
func nesting(obj map[string]any, mode string, min, max uint64, path string) (map[string]any, error) {
	if max > 0 && min > max {
		return nil, &mapError{path, fmt.Sprintf("min_items %d is more than max_items %d", min, max)}
	}
	switch mode {
	case "single", "group":
		return obj, nil
	case "list", "set":
		out := map[string]any{"type": "array", "items": obj}
		if min > 0 {
			out["minItems"] = min
		}
		if max > 0 {
			out["maxItems"] = max
		}
		return out, nil
	case "map":
		return map[string]any{"type": "object", "additionalProperties": obj}, nil
	}
	return nil, &mapError{path, fmt.Sprintf("nesting mode %q is not one of single, group, list, set, map", mode)}
}

// typeSchema maps a cty type in its JSON form.
func typeSchema(raw json.RawMessage, path string, depth int) (map[string]any, error) {
	if depth > maxNesting {
		return nil, &mapError{path, fmt.Sprintf("type nests deeper than %d levels", maxNesting)}
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		switch name {
		case "string":
			return map[string]any{"type": "string"}, nil
		case "number":
			return map[string]any{"type": "number"}, nil
		case "bool":
			return map[string]any{"type": "boolean"}, nil
		case "dynamic":
			return map[string]any{}, nil // any value: checked by the provider
		}
		return nil, &mapError{path, fmt.Sprintf("type %q is not a Terraform type the generator knows (string, number, bool, dynamic, list, set, map, object, tuple)", name)}
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) < 2 {
		return nil, &mapError{path, fmt.Sprintf("type %s is neither a type name nor [kind, element]", clip(raw))}
	}
	var kind string
	if err := json.Unmarshal(parts[0], &kind); err != nil {
		return nil, &mapError{path, fmt.Sprintf("type %s: the first element is not a type kind", clip(raw))}
	}
	switch kind {
	case "list", "set":
		items, err := typeSchema(parts[1], path+"[]", depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case "map":
		values, err := typeSchema(parts[1], path+"{}", depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case "object":
		return objectType(parts, path, depth)
	case "tuple":
		var elems []json.RawMessage
		if err := json.Unmarshal(parts[1], &elems); err != nil {
			return nil, &mapError{path, fmt.Sprintf("tuple type %s: the element types are not a list", clip(raw))}
		}
		items := make([]any, 0, len(elems))
		for i, e := range elems {
			s, err := typeSchema(e, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			items = append(items, s)
		}
		return map[string]any{"type": "array", "prefixItems": items, "items": false, "minItems": len(items)}, nil
	}
	return nil, &mapError{path, fmt.Sprintf("type kind %q is not one of list, set, map, object, tuple", kind)}
}

// objectType maps ["object", {attr: type}, [optional attrs]].
func objectType(parts []json.RawMessage, path string, depth int) (map[string]any, error) {
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(parts[1], &attrs); err != nil {
		return nil, &mapError{path, fmt.Sprintf("object type: the attribute types are not an object: %v", err)}
	}
	var optional []string
	if len(parts) > 2 {
		if err := json.Unmarshal(parts[2], &optional); err != nil {
			return nil, &mapError{path, "object type: the optional attributes are not a list of names"}
		}
	}
	props := map[string]any{}
	var required []string
	for _, name := range sortedKeys(attrs) {
		s, err := typeSchema(attrs[name], join(path, name), depth+1)
		if err != nil {
			return nil, err
		}
		props[name] = s
		if !slices.Contains(optional, name) {
			required = append(required, name)
		}
	}
	out := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, nil
}

// annotate adds an attribute's description and flags. A sensitive
// argument is marked writeOnly, which makes it a secret property: the
// server stores it sealed and shows it redacted (docs/secrets.md).
func annotate(s map[string]any, description string, deprecated, sensitive bool) {
	if d := strings.TrimSpace(description); d != "" {
		s["description"] = d
	}
	if deprecated {
		s["deprecated"] = true
	}
	if sensitive {
		s["writeOnly"] = true
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// clip shortens a fragment of the input for a message.
func clip(raw json.RawMessage) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 60 {
		s = s[:57] + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
