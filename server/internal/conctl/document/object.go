package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// ParseObject parses data, from source (a file path, "stdin" or a flag
// name), as one free-form JSON or YAML mapping, such as an operation's
// input. Source and data decide between JSON and YAML as in Parse, and the
// same limits apply: aliases and nesting are bounded, numbers must be
// finite, timestamps stay strings. The error is an *Error.
func ParseObject(source string, data []byte) (*structpb.Struct, error) {
	if len(data) > MaxFileSize {
		return nil, tooBig(source)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	var n *node
	var err error
	if isJSON(source, data) {
		n, err = jsonObject(data)
	} else {
		n, err = yamlObject(data)
	}
	if err != nil {
		return nil, locate(source, 0, err)
	}
	if n.kind != mapNode {
		return nil, &Error{Source: source, Line: n.line, Message: "want a mapping, got " + describe(n)}
	}
	raw, err := json.Marshal(free(n))
	if err != nil {
		return nil, &Error{Source: source, Line: n.line, Message: err.Error()}
	}
	s := new(structpb.Struct)
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, &Error{Source: source, Line: n.line, Message: protojsonMessage(err)}
	}
	return s, nil
}

// jsonObject reads the one JSON value data holds.
func jsonObject(data []byte) (*node, error) {
	p := newJSONParser(data)
	if p.start() == len(data) {
		return nil, &lineError{line: 1, msg: "empty: want a mapping"}
	}
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if off := p.start(); off < len(data) {
		return nil, &lineError{line: p.lineAt(off), msg: "more than one value: want a single mapping"}
	}
	return n, nil
}

// yamlObject reads the one YAML document data holds.
func yamlObject(data []byte) (*node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var y yaml.Node
	if err := dec.Decode(&y); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &lineError{line: 1, msg: "empty: want a mapping"}
		}
		return nil, yamlLineError(err)
	}
	n, err := newYAMLConverter(len(data)).convert(&y, 0)
	if err != nil {
		return nil, err
	}
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, yamlLineError(err)
		}
		if len(next.Content) > 0 && next.Content[0].ShortTag() != "!!null" {
			return nil, &lineError{line: next.Content[0].Line, msg: "more than one document: want a single mapping"}
		}
	}
	if n.kind == nullNode {
		return nil, &lineError{line: n.line, msg: "empty: want a mapping"}
	}
	return n, nil
}

// yamlLineError is a YAML syntax error as a lineError.
func yamlLineError(err error) *lineError {
	e := yamlError("", 0, err)
	return &lineError{line: e.Line, msg: e.Message}
}

// ReadObject reads one mapping, as ParseObject does, from the file at
// path, or from stdin when path is "-".
func ReadObject(path string, stdin io.Reader) (*structpb.Struct, error) {
	source, data, err := load(path, stdin)
	if err != nil {
		return nil, err
	}
	return ParseObject(source, data)
}
