package document

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonParser reads a stream of JSON values into nodes, tracking the line
// each value starts on.
type jsonParser struct {
	data    []byte
	dec     *json.Decoder
	lineOff int // lines counted up to byte lineOff
	lineNum int
	budget  int
}

func newJSONParser(data []byte) *jsonParser {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return &jsonParser{data: data, dec: dec, lineNum: 1, budget: len(data) + maxValues}
}

// documents returns the top-level values: each element of a top-level array
// is a document of its own, any other value is one document. On a syntax
// error it returns the documents before it; the error is in the next one.
func (p *jsonParser) documents() ([]*node, error) {
	var docs []*node
	for p.start() < len(p.data) {
		if p.data[p.start()] != '[' {
			v, err := p.value(0)
			if err != nil {
				return docs, err
			}
			docs = append(docs, v)
			continue
		}
		if _, _, err := p.token(); err != nil { // the opening [
			return docs, err
		}
		for p.dec.More() {
			v, err := p.value(1)
			if err != nil {
				return docs, err
			}
			docs = append(docs, v)
		}
		if _, _, err := p.token(); err != nil { // the closing ]
			return docs, err
		}
	}
	return docs, nil
}

// start returns the offset where the next token begins.
func (p *jsonParser) start() int {
	off := int(p.dec.InputOffset())
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
		default:
			return off
		}
	}
	return off
}

// lineAt returns the 1-based line of byte off; offsets only grow.
func (p *jsonParser) lineAt(off int) int {
	off = min(off, len(p.data))
	if off > p.lineOff {
		p.lineNum += bytes.Count(p.data[p.lineOff:off], []byte{'\n'})
		p.lineOff = off
	}
	return p.lineNum
}

func (p *jsonParser) token() (json.Token, int, error) {
	line := p.lineAt(p.start())
	tok, err := p.dec.Token()
	if err != nil {
		return nil, line, p.syntaxError(err, line)
	}
	return tok, line, nil
}

func (p *jsonParser) syntaxError(err error, line int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &lineError{line: p.lineAt(int(se.Offset)), msg: "invalid JSON: " + se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &lineError{line: p.lineAt(len(p.data)), msg: "invalid JSON: unexpected end of input"}
	}
	return &lineError{line: line, msg: "invalid JSON: " + err.Error()}
}

func (p *jsonParser) value(depth int) (*node, error) {
	tok, line, err := p.token()
	if err != nil {
		return nil, err
	}
	if depth > maxDepth {
		return nil, &lineError{line: line, msg: fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	if p.budget--; p.budget < 0 {
		return nil, &lineError{line: line, msg: "too many values"}
	}
	switch t := tok.(type) {
	case nil:
		return &node{kind: nullNode, line: line, raw: "null"}, nil
	case bool:
		s := fmt.Sprint(t)
		return &node{kind: boolNode, line: line, text: s, raw: s}, nil
	case json.Number:
		return &node{kind: numberNode, line: line, text: t.String(), raw: t.String()}, nil
	case string:
		return &node{kind: stringNode, line: line, text: t, raw: t}, nil
	case json.Delim:
		switch t {
		case '[':
			return p.list(line, depth)
		case '{':
			return p.object(line, depth)
		}
	}
	return nil, &lineError{line: line, msg: fmt.Sprintf("invalid JSON: unexpected %v", tok)}
}

func (p *jsonParser) list(line, depth int) (*node, error) {
	n := &node{kind: listNode, line: line}
	for p.dec.More() {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, v)
	}
	if _, _, err := p.token(); err != nil { // the closing ]
		return nil, err
	}
	return n, nil
}

func (p *jsonParser) object(line, depth int) (*node, error) {
	n := &node{kind: mapNode, line: line}
	seen := map[string]bool{}
	for p.dec.More() {
		tok, keyLine, err := p.token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, &lineError{line: keyLine, msg: fmt.Sprintf("invalid JSON: object key %v is not a string", tok)}
		}
		if seen[key] {
			return nil, &lineError{line: keyLine, msg: fmt.Sprintf("duplicate key %q", key)}
		}
		seen[key] = true
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		n.fields = append(n.fields, field{key: key, line: keyLine, val: v})
	}
	if _, _, err := p.token(); err != nil { // the closing }
		return nil, err
	}
	return n, nil
}
