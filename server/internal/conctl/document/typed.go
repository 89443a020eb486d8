package document

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// typed converts n into a JSON value for a message of type md, checking the
// shape on the way: unknown fields, lists where lists belong, integers in
// range. Doing this here rather than leaving it to protojson lets every
// error name the field's path and the line it is on. It reports every
// problem it finds, as a shapeErrors.
func typed(n *node, md protoreflect.MessageDescriptor, path string) (any, error) {
	if isWellKnown(md) {
		return wellKnown(n, md, path)
	}
	if n.kind != mapNode {
		return nil, &lineError{line: n.line, path: path, msg: "want a mapping, got " + describe(n)}
	}
	out := make(map[string]any, len(n.fields))
	given := map[protoreflect.FieldNumber]string{}
	var errs shapeErrors
	for _, f := range n.fields {
		fd := md.Fields().ByName(protoreflect.Name(f.key))
		if fd == nil {
			fd = md.Fields().ByJSONName(f.key)
		}
		if fd == nil {
			errs.add(&lineError{line: f.line, path: path, msg: unknownField(f.key, md)})
			continue
		}
		if other, ok := given[fd.Number()]; ok {
			errs.add(&lineError{line: f.line, path: path, msg: fmt.Sprintf("field %q is given twice (also as %q)", f.key, other)})
			continue
		}
		given[fd.Number()] = f.key
		if f.val.kind == nullNode && !isValueField(fd) {
			continue
		}
		v, err := fieldValue(f.val, fd, join(path, string(fd.Name())))
		errs.add(err)
		out[string(fd.Name())] = v
	}
	return out, errs.err()
}

func fieldValue(n *node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	var errs shapeErrors
	switch {
	case fd.IsMap():
		if n.kind != mapNode {
			return nil, &lineError{line: n.line, path: path, msg: "want a mapping, got " + describe(n)}
		}
		out := make(map[string]any, len(n.fields))
		for _, f := range n.fields {
			v, err := singular(f.val, fd.MapValue(), fmt.Sprintf("%s[%q]", path, f.key))
			errs.add(err)
			out[f.key] = v
		}
		return out, errs.err()
	case fd.IsList():
		if n.kind != listNode {
			return nil, &lineError{line: n.line, path: path, msg: "want a list, got " + describe(n)}
		}
		out := make([]any, 0, len(n.items))
		for i, item := range n.items {
			v, err := singular(item, fd, fmt.Sprintf("%s[%d]", path, i))
			errs.add(err)
			out = append(out, v)
		}
		return out, errs.err()
	}
	return singular(n, fd, path)
}

// shapeErrors is every problem typed found, in document order.
type shapeErrors []*lineError

func (e shapeErrors) Error() string {
	msgs := make([]string, len(e))
	for i, le := range e {
		msgs[i] = le.Error()
	}
	return strings.Join(msgs, "\n")
}

// add collects err, which is nil, a *lineError or a shapeErrors.
func (e *shapeErrors) add(err error) {
	switch err := err.(type) {
	case nil:
	case shapeErrors:
		*e = append(*e, err...)
	case *lineError:
		*e = append(*e, err)
	default:
		*e = append(*e, &lineError{msg: err.Error()})
	}
}

func (e shapeErrors) err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// singular converts one value of fd's type (a list item or map value
// included).
func singular(n *node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	bad := func(want string) error {
		return &lineError{line: n.line, path: path, msg: "want " + want + ", got " + describe(n)}
	}
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return typed(n, fd.Message(), path)
	case protoreflect.StringKind:
		switch n.kind {
		case stringNode:
			return n.text, nil
		case numberNode, boolNode:
			return n.raw, nil // a label value such as 1.10 stays as written
		}
		return nil, bad("a string")
	case protoreflect.BytesKind:
		if n.kind != stringNode {
			return nil, bad("a base64 string")
		}
		return n.text, nil
	case protoreflect.BoolKind:
		if n.kind != boolNode {
			return nil, bad("true or false")
		}
		return n.text == "true", nil
	case protoreflect.EnumKind:
		if n.kind != stringNode && n.kind != numberNode {
			return nil, bad("an enum name")
		}
		return scalarJSON(n), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		if n.kind == numberNode {
			return json.Number(n.text), nil
		}
		if n.kind == stringNode && (n.text == "NaN" || n.text == "Infinity" || n.text == "-Infinity") {
			return n.text, nil
		}
		return nil, bad("a number")
	}
	return integer(n, fd, path)
}

// integer checks an integer field's value and range.
func integer(n *node, fd protoreflect.FieldDescriptor, path string) (any, error) {
	if n.kind != numberNode && n.kind != stringNode {
		return nil, &lineError{line: n.line, path: path, msg: "want an integer, got " + describe(n)}
	}
	lo, hi := intRange(fd.Kind())
	text := strings.TrimSpace(n.text)
	if len(text) > 32 {
		return nil, &lineError{line: n.line, path: path, msg: fmt.Sprintf("%s is out of range for %s (%s..%s)", describe(n), fd.Kind(), lo, hi)}
	}
	v, ok := new(big.Int).SetString(text, 10)
	if !ok {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || f != math.Trunc(f) || math.IsInf(f, 0) {
			return nil, &lineError{line: n.line, path: path, msg: "want an integer, got " + describe(n)}
		}
		v, _ = big.NewFloat(f).Int(nil)
	}
	if v.Cmp(lo) < 0 || v.Cmp(hi) > 0 {
		return nil, &lineError{line: n.line, path: path, msg: fmt.Sprintf("%s is out of range for %s (%s..%s)", v, fd.Kind(), lo, hi)}
	}
	return json.Number(v.String()), nil
}

func intRange(k protoreflect.Kind) (lo, hi *big.Int) {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return big.NewInt(0), big.NewInt(math.MaxUint32)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return big.NewInt(0), new(big.Int).SetUint64(math.MaxUint64)
	}
	return big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
}

func isWellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile() != nil && md.ParentFile().Package() == "google.protobuf"
}

// isValueField reports whether null is a value of fd rather than "unset".
func isValueField(fd protoreflect.FieldDescriptor) bool {
	return fd.Message() != nil && fd.Message().FullName() == "google.protobuf.Value"
}

// wellKnown passes free-form values through; protojson checks the rest.
func wellKnown(n *node, md protoreflect.MessageDescriptor, path string) (any, error) {
	switch md.FullName() {
	case "google.protobuf.Struct":
		if n.kind != mapNode {
			return nil, &lineError{line: n.line, path: path, msg: "want a mapping, got " + describe(n)}
		}
	case "google.protobuf.ListValue":
		if n.kind != listNode {
			return nil, &lineError{line: n.line, path: path, msg: "want a list, got " + describe(n)}
		}
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		if n.kind != stringNode {
			return nil, &lineError{line: n.line, path: path, msg: "want a string, got " + describe(n)}
		}
	}
	return free(n), nil
}

// free converts any node to a JSON value without a schema.
func free(n *node) any {
	switch n.kind {
	case listNode:
		out := make([]any, 0, len(n.items))
		for _, item := range n.items {
			out = append(out, free(item))
		}
		return out
	case mapNode:
		out := make(map[string]any, len(n.fields))
		for _, f := range n.fields {
			out[f.key] = free(f.val)
		}
		return out
	}
	return scalarJSON(n)
}

func scalarJSON(n *node) any {
	switch n.kind {
	case boolNode:
		return n.text == "true"
	case numberNode:
		return json.Number(n.text)
	case stringNode:
		return n.text
	}
	return nil
}

func describe(n *node) string {
	switch n.kind {
	case stringNode:
		s := n.text
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return strconv.Quote(s)
	case numberNode, boolNode:
		return n.raw
	}
	return n.kind.String()
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// unknownField names the key and, when one is close, the field meant.
func unknownField(key string, md protoreflect.MessageDescriptor) string {
	msg := fmt.Sprintf("unknown field %q", key)
	var names []string
	fields := md.Fields()
	for i := range fields.Len() {
		names = append(names, string(fields.Get(i).Name()))
	}
	sort.Strings(names)
	limit := 1
	if len(key) > 5 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, name := range names {
		if d := distance(strings.ToLower(key), name); d < bestDist {
			best, bestDist = name, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg
}

// distance is the edit distance between a and b counting a swap of two
// neighbouring letters as one edit. Long inputs are never close.
func distance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt
	}
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
