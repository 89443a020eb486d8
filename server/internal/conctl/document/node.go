package document

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Limits that keep a hostile document from exhausting memory or the stack.
const (
	maxDepth = 200
	// maxValues is how far aliases may expand a file beyond one value per
	// byte, which is all a file without aliases can hold.
	maxValues = 1 << 17
)

type nodeKind uint8

const (
	nullNode nodeKind = iota
	boolNode
	numberNode
	stringNode
	listNode
	mapNode
)

func (k nodeKind) String() string {
	switch k {
	case boolNode:
		return "a boolean"
	case numberNode:
		return "a number"
	case stringNode:
		return "a string"
	case listNode:
		return "a list"
	case mapNode:
		return "a mapping"
	default:
		return "null"
	}
}

// node is a parsed JSON or YAML value that remembers the line it came from,
// so that later errors can point at it.
type node struct {
	kind   nodeKind
	line   int
	text   string // string value, canonical JSON number, or "true"/"false"
	raw    string // a scalar as written in the source
	items  []*node
	fields []field
}

type field struct {
	key  string
	line int
	val  *node
}

// get returns the value under key in a mapping node.
func (n *node) get(key string) (field, bool) {
	for _, f := range n.fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// lineError is an error at a line of the current document.
type lineError struct {
	line int
	path string
	msg  string
}

func (e *lineError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// yamlConverter turns a yaml.Node into a node, expanding aliases and merge
// keys within a budget of values.
type yamlConverter struct {
	limit  int
	budget int
}

func newYAMLConverter(size int) *yamlConverter {
	return &yamlConverter{limit: size + maxValues, budget: size + maxValues}
}

func (c *yamlConverter) convert(y *yaml.Node, depth int) (*node, error) {
	if depth > maxDepth {
		return nil, &lineError{line: y.Line, msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	if c.budget--; c.budget < 0 {
		return nil, &lineError{line: y.Line, msg: fmt.Sprintf("aliases expand this file to more than %d values", c.limit)}
	}
	switch y.Kind {
	case yaml.DocumentNode:
		if len(y.Content) == 0 {
			return &node{kind: nullNode, line: y.Line}, nil
		}
		return c.convert(y.Content[0], depth)
	case yaml.AliasNode:
		if y.Alias == nil {
			return nil, &lineError{line: y.Line, msg: "alias to an unknown anchor"}
		}
		return c.convert(y.Alias, depth+1)
	case yaml.ScalarNode:
		return scalar(y)
	case yaml.SequenceNode:
		n := &node{kind: listNode, line: y.Line, items: make([]*node, 0, len(y.Content))}
		for _, item := range y.Content {
			v, err := c.convert(item, depth+1)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, v)
		}
		return n, nil
	case yaml.MappingNode:
		return c.mapping(y, depth)
	}
	return nil, &lineError{line: y.Line, msg: "unsupported YAML node"}
}

// mapping converts a YAML mapping. Keys written in the mapping win over keys
// brought in by a merge key (<<), whatever their order.
func (c *yamlConverter) mapping(y *yaml.Node, depth int) (*node, error) {
	n := &node{kind: mapNode, line: y.Line}
	seen := map[string]bool{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(y.Content); i += 2 {
		k, v := y.Content[i], y.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		key, err := c.key(k)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, &lineError{line: k.Line, msg: fmt.Sprintf("duplicate key %q", key)}
		}
		seen[key] = true
		val, err := c.convert(v, depth+1)
		if err != nil {
			return nil, err
		}
		n.fields = append(n.fields, field{key: key, line: k.Line, val: val})
	}
	for _, m := range merges {
		if err := c.merge(n, seen, m, depth); err != nil {
			return nil, err
		}
	}
	return n, nil
}

func (c *yamlConverter) merge(n *node, seen map[string]bool, m *yaml.Node, depth int) error {
	src := m
	if src.Kind == yaml.AliasNode && src.Alias != nil {
		src = src.Alias
	}
	if src.Kind == yaml.SequenceNode {
		for _, item := range src.Content {
			if err := c.merge(n, seen, item, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if src.Kind != yaml.MappingNode {
		return &lineError{line: m.Line, msg: "a merge key (<<) needs a mapping or a list of mappings"}
	}
	merged, err := c.convert(src, depth+1)
	if err != nil {
		return err
	}
	for _, f := range merged.fields {
		if !seen[f.key] {
			seen[f.key] = true
			n.fields = append(n.fields, f)
		}
	}
	return nil
}

func (c *yamlConverter) key(k *yaml.Node) (string, error) {
	if k.Kind == yaml.AliasNode && k.Alias != nil {
		k = k.Alias
	}
	if k.Kind != yaml.ScalarNode {
		return "", &lineError{line: k.Line, msg: "a mapping key must be a plain value, not a list or mapping"}
	}
	return k.Value, nil
}

// scalar resolves a YAML scalar the way YAML does, then keeps it in a form
// JSON can carry: timestamps and binary stay strings, numbers must be finite.
func scalar(y *yaml.Node) (*node, error) {
	n := &node{line: y.Line, raw: y.Value}
	switch tag := y.ShortTag(); tag {
	case "!!null":
		n.kind = nullNode
	case "!!bool":
		var b bool
		if err := y.Decode(&b); err != nil {
			return nil, &lineError{line: y.Line, msg: fmt.Sprintf("invalid boolean %q", y.Value)}
		}
		n.kind, n.text = boolNode, strconv.FormatBool(b)
	case "!!int":
		text, err := yamlInt(y)
		if err != nil {
			return nil, err
		}
		n.kind, n.text = numberNode, text
	case "!!float":
		var f float64
		if err := y.Decode(&f); err != nil {
			return nil, &lineError{line: y.Line, msg: fmt.Sprintf("invalid number %q", y.Value)}
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, &lineError{line: y.Line, msg: fmt.Sprintf("%s is not a finite number (JSON has no NaN or infinity; quote it for a string)", y.Value)}
		}
		n.kind, n.text = numberNode, strconv.FormatFloat(f, 'g', -1, 64)
	case "!!str", "!!timestamp", "!!binary", "!!merge":
		n.kind, n.text = stringNode, y.Value
	default:
		return nil, &lineError{line: y.Line, msg: fmt.Sprintf("unsupported YAML tag %q", tag)}
	}
	return n, nil
}

func yamlInt(y *yaml.Node) (string, error) {
	var i int64
	if err := y.Decode(&i); err == nil {
		return strconv.FormatInt(i, 10), nil
	}
	var u uint64
	if err := y.Decode(&u); err == nil {
		return strconv.FormatUint(u, 10), nil
	}
	if b, ok := new(big.Int).SetString(y.Value, 0); ok {
		return b.String(), nil
	}
	return "", &lineError{line: y.Line, msg: fmt.Sprintf("invalid integer %q", y.Value)}
}
