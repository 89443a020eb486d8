package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"buf.build/go/protovalidate"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// MaxFileSize is the largest input (file or stdin) accepted, in bytes.
const MaxFileSize = 32 << 20

// maxErrors caps the errors reported by one call; after that many, more
// are likely the same mistake repeated.
const maxErrors = 50

// Parse parses the documents in data, which came from source (a file path,
// or "stdin"). A source ending in .json is read as JSON, one ending in .yaml
// or .yml as YAML; otherwise data starting with '{' or '[' is JSON.
//
// It returns every document that parsed and, if any did not, an error joining
// one *Error per problem.
func Parse(source string, data []byte, opts ...Option) ([]*Document, error) {
	var errs errorList
	docs := parse(source, data, newOptions(opts), &errs)
	return docs, errs.err()
}

func parse(source string, data []byte, o *options, errs *errorList) []*Document {
	if len(data) > MaxFileSize {
		errs.add(tooBig(source))
		return nil
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if isJSON(source, data) {
		return parseJSON(source, data, o, errs)
	}
	return parseYAML(source, data, o, errs)
}

func tooBig(source string) *Error {
	return &Error{Source: source, Message: fmt.Sprintf("larger than the %d MiB limit per file", MaxFileSize>>20)}
}

func isJSON(source string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(source)) {
	case ".json":
		return true
	case ".yaml", ".yml":
		return false
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
}

func parseJSON(source string, data []byte, o *options, errs *errorList) []*Document {
	nodes, err := newJSONParser(data).documents()
	var docs []*Document
	for i, n := range nodes {
		if doc := decode(source, i+1, n, o, errs); doc != nil {
			docs = append(docs, doc)
		}
	}
	if err != nil {
		errs.add(locate(source, len(nodes)+1, err))
	}
	return docs
}

func parseYAML(source string, data []byte, o *options, errs *errorList) []*Document {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	conv := newYAMLConverter(len(data))
	var docs []*Document
	for index := 1; !errs.full(); index++ {
		var y yaml.Node
		err := dec.Decode(&y)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs.add(yamlError(source, index, err))
			break
		}
		n, err := conv.convert(&y, 0)
		if err != nil {
			errs.add(locate(source, index, err))
			continue
		}
		if n.kind == nullNode { // empty, or comments only
			continue
		}
		if doc := decode(source, index, n, o, errs); doc != nil {
			docs = append(docs, doc)
		}
	}
	return docs
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlError(source string, index int, err error) *Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Source: source, Index: index, Line: line, Message: "invalid YAML: " + m[2]}
	}
	return &Error{Source: source, Index: index, Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// locate turns a lineError into an Error of the document.
func locate(source string, index int, err error) *Error {
	var le *lineError
	if errors.As(err, &le) {
		return &Error{Source: source, Index: index, Line: le.line, Message: le.Error()}
	}
	return &Error{Source: source, Index: index, Message: err.Error()}
}

// decode checks one document's type and fields and builds its message.
func decode(source string, index int, n *node, o *options, errs *errorList) *Document {
	fail := func(line int, msg string) *Document {
		errs.add(&Error{Source: source, Index: index, Line: line, Message: msg})
		return nil
	}
	oneOf := "(one of " + strings.Join(Types(), ", ") + ")"
	if n.kind != mapNode {
		return fail(n.line, fmt.Sprintf("want a mapping with a \"type\" key %s, got %s", oneOf, describe(n)))
	}
	typeField, ok := n.get("type")
	if !ok {
		return fail(n.line, `missing "type" `+oneOf)
	}
	if typeField.val.kind != stringNode {
		return fail(typeField.line, fmt.Sprintf(`"type" must be a string %s, got %s`, oneOf, describe(typeField.val)))
	}
	dt, ok := lookupType(typeField.val.text)
	if !ok {
		return fail(typeField.line, fmt.Sprintf("unknown type %q %s", typeField.val.text, oneOf))
	}

	var shape shapeErrors
	body := &node{kind: mapNode, line: n.line}
	for _, f := range n.fields {
		switch {
		case f.key == "type":
		case dt.isOutputOnly(f.key):
			shape.add(&lineError{line: f.line, path: f.key, msg: "set by the server; leave it out"})
		default:
			body.fields = append(body.fields, f)
		}
	}
	msg := dt.new()
	value, err := typed(body, msg.ProtoReflect().Descriptor(), "")
	shape.add(err)
	if len(shape) > 0 {
		sort.SliceStable(shape, func(i, j int) bool { return shape[i].line < shape[j].line })
		for _, le := range shape {
			errs.add(locate(source, index, le))
		}
		return nil
	}
	data, err := json.Marshal(value)
	if err != nil {
		return fail(n.line, err.Error())
	}
	if err := protojson.Unmarshal(data, msg); err != nil {
		return fail(n.line, protojsonMessage(err))
	}
	if dt.fill != nil {
		dt.fill(msg, o)
	}
	if err := protovalidate.Validate(msg); err != nil {
		var verr *protovalidate.ValidationError
		if !errors.As(err, &verr) {
			return fail(n.line, "cannot check the rules: "+err.Error())
		}
		for _, v := range verr.Violations {
			errs.add(&Error{Source: source, Index: index, Line: lineOf(body, v), Message: ViolationMessage(v)})
		}
		return nil
	}
	return &Document{Source: source, Index: index, Line: n.line, Type: dt.name, Message: msg}
}

// protojsonMessage drops protojson's prefix and its position in the JSON
// we built, which would mean nothing to the reader.
var protojsonPrefix = regexp.MustCompile(`^proto:\s*(syntax error\s*)?(\(line \d+:\d+\):\s*)?`)

func protojsonMessage(err error) string {
	return protojsonPrefix.ReplaceAllString(err.Error(), "")
}

// errorList collects up to maxErrors errors.
type errorList struct {
	errs      []error
	truncated bool
}

func (l *errorList) add(e *Error) {
	if len(l.errs) >= maxErrors {
		l.truncated = true
		return
	}
	l.errs = append(l.errs, e)
}

func (l *errorList) full() bool { return len(l.errs) >= maxErrors }

func (l *errorList) err() error {
	errs := l.errs
	if l.truncated {
		errs = append(errs, fmt.Errorf("too many errors; stopped after %d", maxErrors))
	}
	return errors.Join(errs...)
}
