package labels

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// keyRule is the rule apply enforces on label keys and the length limit of
// label values, read from the protovalidate rules of
// ApplyResourceRequest.labels rather than written a second time: a selector
// can name exactly the keys a resource can have.
var keyRule = readKeyRule()

type labelRule struct {
	key         *regexp.Regexp
	maxKeyLen   int
	maxValueLen int
}

// keyForm says in words what keyRule's pattern admits; TestKeyForm keeps
// the two in step.
const keyForm = "letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit"

// valueSyntax are the characters of the selector grammar, which no value in
// a selector can hold.
const valueSyntax = "=!,()"

func readKeyRule() labelRule {
	fd := (&convergev1.ApplyResourceRequest{}).ProtoReflect().Descriptor().Fields().ByName("labels")
	rules, _ := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
	keys, values := rules.GetMap().GetKeys().GetString(), rules.GetMap().GetValues().GetString()
	if keys.GetPattern() == "" || keys.GetMaxLen() == 0 || values.GetMaxLen() == 0 {
		// Only an edit of control.proto gets here, and every test fails on it.
		panic("labels: ApplyResourceRequest.labels lost its key pattern or length limits")
	}
	return labelRule{key: regexp.MustCompile(keys.GetPattern()), maxKeyLen: int(keys.GetMaxLen()), maxValueLen: int(values.GetMaxLen())}
}

func checkKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("missing label key")
	case utf8.RuneCountInString(k) > keyRule.maxKeyLen:
		return fmt.Errorf("label key is %d characters; the limit is %d", utf8.RuneCountInString(k), keyRule.maxKeyLen)
	case !keyRule.key.MatchString(k):
		return fmt.Errorf("label key %q must be %s", k, keyForm)
	}
	return nil
}

func checkValue(v string) error {
	switch {
	case !utf8.ValidString(v):
		return fmt.Errorf("label value %q is not valid UTF-8", v)
	case utf8.RuneCountInString(v) > keyRule.maxValueLen:
		return fmt.Errorf("label value is %d characters; the limit is %d", utf8.RuneCountInString(v), keyRule.maxValueLen)
	case strings.ContainsAny(v, valueSyntax):
		return fmt.Errorf("label value %q cannot contain any of %s, which the selector syntax uses", v, strings.Join(strings.Split(valueSyntax, ""), " "))
	}
	return nil
}
