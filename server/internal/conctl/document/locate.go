package document

import (
	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
)

// lineOf finds the line of the value a violation is about by following its
// field path through the document, stopping at the deepest part present.
func lineOf(body *node, v *protovalidate.Violation) int {
	n := body
	line := body.line
	for _, el := range v.Proto.GetField().GetElements() {
		f, ok := fieldByName(n, el)
		if !ok {
			return line
		}
		n, line = f.val, f.line
		switch el.WhichSubscript() {
		case validate.FieldPathElement_Index_case:
			i := el.GetIndex()
			if n.kind != listNode || i >= uint64(len(n.items)) {
				return line
			}
			n = n.items[i]
			line = n.line
		case validate.FieldPathElement_StringKey_case:
			f, ok := n.get(el.GetStringKey())
			if !ok {
				return line
			}
			n, line = f.val, f.line
		}
	}
	return line
}

// fieldByName finds a field of a mapping by its proto or JSON name.
func fieldByName(n *node, el *validate.FieldPathElement) (field, bool) {
	if n.kind != mapNode {
		return field{}, false
	}
	if f, ok := n.get(el.GetFieldName()); ok {
		return f, true
	}
	return n.get(jsonName(el.GetFieldName()))
}

// jsonName is protoc's default JSON name for a field: lowerCamelCase.
func jsonName(name string) string {
	out := make([]byte, 0, len(name))
	upper := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '_' {
			upper = true
			continue
		}
		if upper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		upper = false
		out = append(out, c)
	}
	return string(out)
}
