// Package rpcvalidate checks every incoming RPC message against the
// protovalidate rules written in the proto files, so handlers only see
// well-formed requests. A violation is an InvalidArgument error naming
// each offending field.
package rpcvalidate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"buf.build/go/protovalidate"
	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/convergehq/converge/server/internal/storable"
)

// Interceptor validates unary requests and every message a client streams.
type Interceptor struct {
	v        protovalidate.Validator
	storable bool
}

// Option tunes the interceptor.
type Option func(*Interceptor)

// RequireStorable also refuses a message holding a value the database
// cannot store (package storable), naming its field. A service whose
// messages carry such values to be judged later (a worker's result,
// failed as the task's outcome) goes without.
func RequireStorable() Option { return func(i *Interceptor) { i.storable = true } }

// New builds the interceptor.
func New(opts ...Option) (*Interceptor, error) {
	v, err := protovalidate.New()
	if err != nil {
		return nil, err
	}
	i := &Interceptor{v: v}
	for _, o := range opts {
		o(i)
	}
	return i, nil
}

// Check validates one message and returns an InvalidArgument error
// listing every violation.
func (i *Interceptor) Check(msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return nil
	}
	// A value that cannot be stored is refused first: it cannot be fixed
	// by following any other message.
	if i.storable {
		if path, why := storable.Message(m); why != "" {
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("invalid request: %s: %s", path, why))
		}
	}
	err := i.v.Validate(m)
	if err == nil {
		return nil
	}
	var verr *protovalidate.ValidationError
	if !errors.As(err, &verr) {
		return connect.NewError(connect.CodeInternal, fmt.Errorf("validating request: %w", err))
	}
	var parts []string
	for _, v := range verr.Violations {
		parts = append(parts, Message(v))
	}
	return connect.NewError(connect.CodeInvalidArgument, errors.New("invalid request: "+strings.Join(parts, "; ")))
}

// Message is the text of one violation: the field's path in proto
// (snake_case) names, then what the rule wants in plain words, with the
// value given where that helps. protovalidate's own texts read like "must be
// at least 1 characters"; the rewrite goes by the rule's id and value, not
// by the text. This project's predefined naming rules (rules.proto) have
// messages written in words, which get the value in front; any other rule
// keeps protovalidate's text. conctl shows the same text for the documents
// it checks before sending them.
func Message(v *protovalidate.Violation) string {
	msg := explain(v)
	if v.Proto.GetForKey() {
		msg = "key " + msg
	}
	if field := protovalidate.FieldPathString(v.Proto.GetField()); field != "" {
		return field + ": " + msg
	}
	return msg
}

// explain words the rule v broke.
func explain(v *protovalidate.Violation) string {
	id, rule, val := v.Proto.GetRuleId(), v.RuleValue, v.FieldValue
	fallback := v.Proto.GetMessage()
	if fallback == "" {
		fallback = "breaks the rule " + id
	}
	if id == "required" {
		return "must be set"
	}
	if !rule.IsValid() || !val.IsValid() {
		return fallback
	}
	kind, name, _ := strings.Cut(id, ".")
	switch kind {
	case "string", "bytes":
		return explainText(kind, name, rule, val, fallback)
	case "repeated", "map":
		return explainCount(kind, name, rule, val, fallback)
	case "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "float", "double":
		return explainBound(v, name, fallback)
	case "converge":
		// The predefined naming rules: their message says what is allowed.
		return quote(val.String()) + " " + fallback
	}
	return fallback
}

// explainText words the string and bytes rules.
func explainText(kind, name string, rule, val protoreflect.Value, fallback string) string {
	size, unit := utf8.RuneCountInString(val.String()), "character"
	switch {
	case kind == "bytes":
		size, unit = len(val.Bytes()), "byte"
	case strings.HasSuffix(name, "_bytes"):
		size, unit = len(val.String()), "byte"
	}
	switch name {
	case "min_len", "min_bytes":
		if rule.Uint() == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must be at least %s (it is %d)", count(rule.Uint(), unit), size)
	case "max_len", "max_bytes":
		return fmt.Sprintf("must be at most %s (it is %d)", count(rule.Uint(), unit), size)
	case "pattern":
		return fmt.Sprintf("%s does not match the pattern %s", quote(val.String()), rule.String())
	case "in":
		return explainIn(rule, val, fallback)
	}
	return fallback
}

// explainIn names the allowed values. A list that admits the empty string
// means "one of these, or leave it out for the default", which
// protovalidate shows as "must be in list [, delete, retain]".
func explainIn(rule, val protoreflect.Value, fallback string) string {
	list, ok := rule.Interface().(protoreflect.List)
	if !ok {
		return fallback
	}
	var allowed []string
	optional := false
	for i := range list.Len() {
		if s := list.Get(i).String(); s != "" {
			allowed = append(allowed, s)
		} else {
			optional = true
		}
	}
	msg := fmt.Sprintf("%s is not one of %s", quote(val.String()), strings.Join(allowed, ", "))
	if optional {
		msg += " (or leave it out for the default)"
	}
	return msg
}

// explainCount words the rules on the number of items of a list or map.
func explainCount(kind, name string, rule, val protoreflect.Value, fallback string) string {
	unit, n := "item", 0
	if kind == "map" {
		unit, n = "entry", val.Map().Len()
	} else {
		n = val.List().Len()
	}
	switch name {
	case "min_items", "min_pairs":
		if rule.Uint() == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("must have at least %s (it has %d)", count(rule.Uint(), unit), n)
	case "max_items", "max_pairs":
		return fmt.Sprintf("must have at most %s (it has %d)", count(rule.Uint(), unit), n)
	case "unique":
		return "must not repeat a value"
	}
	return fallback
}

// explainBound words a number's bounds. A rule with both bounds (such as
// int32.gte_lte) carries only the lower one as its value; the upper one is
// read from the same rules message.
func explainBound(v *protovalidate.Violation, name, fallback string) string {
	rules := ruleSet(v)
	if rules == nil {
		return fallback
	}
	bound := func(field string) string {
		fd := rules.Descriptor().Fields().ByName(protoreflect.Name(field))
		if fd == nil || !rules.Has(fd) {
			return ""
		}
		return fmt.Sprint(rules.Get(fd).Interface())
	}
	is := fmt.Sprint(v.FieldValue.Interface())
	lower, upper := "", ""
	switch {
	case bound("gte") != "":
		lower = "at least " + bound("gte")
	case bound("gt") != "":
		lower = "greater than " + bound("gt")
	}
	switch {
	case bound("lte") != "":
		upper = "at most " + bound("lte")
	case bound("lt") != "":
		upper = "less than " + bound("lt")
	}
	switch {
	case !isBound(name) || lower == "" && upper == "":
		return fallback // const, in, finite and the like
	case lower != "" && upper != "":
		return fmt.Sprintf("must be %s and %s (it is %s)", lower, upper, is)
	}
	return fmt.Sprintf("must be %s (it is %s)", lower+upper, is)
}

// isBound reports whether a number rule's name is a bound or a range:
// gt, gte, lt, lte, gte_lte, gt_lt_exclusive and so on.
func isBound(name string) bool {
	for _, part := range strings.Split(name, "_") {
		switch part {
		case "gt", "gte", "lt", "lte", "exclusive":
		default:
			return false
		}
	}
	return true
}

// ruleSet is the rules message that holds the rule v broke (such as the
// Int32Rules of the field), found by following the rule's path from the
// field's rules; nil if the path leads elsewhere.
func ruleSet(v *protovalidate.Violation) protoreflect.Message {
	if v.FieldDescriptor == nil {
		return nil
	}
	fr, ok := proto.GetExtension(v.FieldDescriptor.Options(), validate.E_Field).(*validate.FieldRules)
	if !ok || fr == nil {
		return nil
	}
	m := fr.ProtoReflect()
	elems := v.Proto.GetRule().GetElements()
	for i := 0; i < len(elems)-1; i++ {
		fd := m.Descriptor().Fields().ByNumber(protoreflect.FieldNumber(elems[i].GetFieldNumber()))
		if fd == nil || fd.Message() == nil || fd.IsList() || fd.IsMap() {
			return nil
		}
		m = m.Get(fd).Message()
	}
	return m
}

// count is "1 character", "2 characters".
func count(n uint64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	if strings.HasSuffix(unit, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(unit, "y"))
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// quote quotes a value for a message, cut to a readable length.
func quote(s string) string {
	const max = 64
	if utf8.RuneCountInString(s) > max {
		return strconv.Quote(string([]rune(s)[:max])) + "..."
	}
	return strconv.Quote(s)
}

// WrapUnary implements connect.Interceptor.
func (i *Interceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if err := i.Check(req.Any()); err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

// WrapStreamingClient implements connect.Interceptor; clients are not checked.
func (i *Interceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

// WrapStreamingHandler implements connect.Interceptor.
func (i *Interceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return next(ctx, &checkedConn{StreamingHandlerConn: conn, i: i})
	}
}

type checkedConn struct {
	connect.StreamingHandlerConn
	i *Interceptor
}

func (c *checkedConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	return c.i.Check(msg)
}
