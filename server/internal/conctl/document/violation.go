package document

import (
	"fmt"
	"strings"

	"buf.build/go/protovalidate"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// ViolationMessage is the text conctl shows for a rule violation found by
// protovalidate: its own text, made plainer where that reads badly. A
// "string.in" list that admits the empty string means "one of these, or
// leave it out for the default", which protovalidate shows as "must be in
// list [, delete, retain]"; this says so in words and shows the value
// given.
func ViolationMessage(v *protovalidate.Violation) string {
	if v.Proto.GetRuleId() != "string.in" || !v.RuleValue.IsValid() || !v.FieldValue.IsValid() {
		return v.String()
	}
	list, ok := v.RuleValue.Interface().(protoreflect.List)
	if !ok {
		return v.String()
	}
	var allowed []string
	optional := false
	for i := range list.Len() {
		s := list.Get(i).String()
		if s == "" {
			optional = true
			continue
		}
		allowed = append(allowed, s)
	}
	if !optional {
		return v.String()
	}
	path := protovalidate.FieldPathString(v.Proto.GetField())
	return fmt.Sprintf("%s: %q is not one of %s (or leave it out for the default)", path, v.FieldValue.String(), strings.Join(allowed, ", "))
}
