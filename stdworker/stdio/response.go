package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/convergehq/converge/sdk-go/converge"
)

// quoteLen is how much of unparseable output an error quotes.
const quoteLen = 120

// ParseResponse parses what a program printed on stdout. Empty output (or
// only whitespace) is an empty response. Anything that is not one JSON
// object of the protocol's shape is an error that says where it went wrong
// and quotes the start of the output. It never panics.
func ParseResponse(stdout []byte) (*Response, error) {
	trimmed := bytes.TrimSpace(stdout)
	if len(trimmed) == 0 {
		return &Response{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	var resp Response
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("response is not a %s JSON object: %s; stdout begins %s",
			Protocol, describeJSONError(err, trimmed), quote(trimmed))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := dec.InputOffset()
		return nil, fmt.Errorf("response has more after its JSON object, at byte %d (%s): print exactly one object; stdout begins %s",
			off, lineCol(trimmed, off-1), quote(trimmed))
	}
	if resp.Protocol != "" && resp.Protocol != Protocol {
		return nil, fmt.Errorf("response.protocol: %q is not spoken here; want %q", resp.Protocol, Protocol)
	}
	if err := objectOrNull("status", resp.Status); err != nil {
		return nil, err
	}
	if err := objectOrNull("output", resp.Output); err != nil {
		return nil, err
	}
	if resp.Children != nil {
		for i, c := range *resp.Children {
			if err := objectOrNull(fmt.Sprintf("children[%d].spec", i), c.Spec); err != nil {
				return nil, err
			}
		}
	}
	return &resp, nil
}

// describeJSONError says what went wrong and where: the byte offset, line
// and column, or the field for a value of the wrong type or an unknown
// field.
func describeJSONError(err error, data []byte) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("%s at byte %d (%s)", syntax.Error(), syntax.Offset, lineCol(data, syntax.Offset-1))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the response"
		}
		return fmt.Sprintf("%s: want %s, got JSON %s, at byte %d (%s)", field, typ.Type, typ.Value, typ.Offset, lineCol(data, typ.Offset-1))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends in the middle of a value"
	}
	// Unknown fields: encoding/json names them in its message.
	return strings.TrimPrefix(err.Error(), "json: ")
}

// lineCol gives the position of the byte at index off (0-based) as "line L,
// column C" (1-based). encoding/json's offsets count the bytes read up to and
// including the offending one, so they are 1-based byte numbers already.
func lineCol(data []byte, off int64) string {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// quote returns the start of out, quoted, as valid UTF-8, with an ellipsis
// when cut.
func quote(out []byte) string {
	if len(out) <= quoteLen {
		return fmt.Sprintf("%q", strings.ToValidUTF8(string(out), "\uFFFD"))
	}
	head := out[:quoteLen]
	// Do not cut a character in half.
	for i := 0; i < 3; i++ {
		if r, size := utf8.DecodeLastRune(head); r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
	}
	return fmt.Sprintf("%q…", strings.ToValidUTF8(string(head), "\uFFFD"))
}

func objectOrNull(field string, raw json.RawMessage) error {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) || t[0] == '{' {
		return nil
	}
	return fmt.Errorf("response.%s: want a JSON object or null, got %s", field, quote(t))
}

// Result turns the response into the SDK's result for a reaction triggered
// by trigger that emits emits, refusing what the reaction cannot report.
// A reactor gets a nil Result.
func (r *Response) Result(trigger string, emits []string) (*converge.Result, error) {
	composer := slices.Contains(emits, "children")
	switch {
	case trigger == "reactor":
		if f := r.firstSet(); f != "" {
			return nil, fmt.Errorf("response.%s: a reactor reports nothing; print {} or nothing", f)
		}
		return nil, nil
	case composer && r.Children == nil:
		return nil, errors.New(`response.children: this reaction emits children, so the response must list them all ("children": [] prunes every child)`)
	case !composer && r.Children != nil:
		return nil, errors.New("response.children: this reaction does not emit children")
	case !composer && (len(r.Edges) > 0 || len(r.References) > 0):
		return nil, errors.New("response.edges: edges and references come with children, from a reaction that emits children")
	case trigger != "operation" && !isNull(r.Output):
		return nil, errors.New("response.output: only an operation reaction reports output")
	}
	res := &converge.Result{Unhealthy: r.Unhealthy, Compose: composer}
	if !isNull(r.Status) {
		res.Status = r.Status
	}
	if !isNull(r.Output) {
		res.Output = r.Output
	}
	for _, c := range r.Conditions {
		res.Conditions = append(res.Conditions, converge.Condition{Type: c.Type,
			Status: converge.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
	}
	if r.Children != nil {
		for _, c := range *r.Children {
			child := converge.Child{Kind: c.Kind, KindVersion: c.Version, Name: c.Name, Labels: c.Labels}
			if !isNull(c.Spec) {
				child.Spec = c.Spec
			}
			res.Children = append(res.Children, child)
		}
	}
	for _, e := range r.Edges {
		edge := converge.Edge{Dependent: sdkRef(e.Dependent), Dependency: sdkRef(e.Dependency)}
		for _, f := range e.Flows {
			edge.Flows = append(edge.Flows, converge.Flow{From: f.From, Expr: f.Expr, To: f.To})
		}
		res.Edges = append(res.Edges, edge)
	}
	for _, ref := range r.References {
		res.References = append(res.References, sdkRef(ref))
	}
	return res, nil
}

// firstSet names the first field of the response that is set.
func (r *Response) firstSet() string {
	switch {
	case !isNull(r.Status):
		return "status"
	case r.Unhealthy:
		return "unhealthy"
	case len(r.Conditions) > 0:
		return "conditions"
	case r.Children != nil:
		return "children"
	case len(r.Edges) > 0:
		return "edges"
	case len(r.References) > 0:
		return "references"
	case !isNull(r.Output):
		return "output"
	}
	return ""
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

func sdkRef(r Ref) converge.Ref {
	return converge.Ref{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name}
}
