package conctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// protoJSON encodes m with proto field names and without unset fields, in
// compact form. A resource always carries "phase", even when empty, because
// everything that reads a resource keys off it.
func protoJSON(m proto.Message) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	if r, ok := m.(*convergev1.Resource); ok && r.GetPhase() == "" {
		sep := ","
		if string(out) == "{}" {
			sep = ""
		}
		out = append([]byte(`{"phase":""`+sep), out[1:]...)
	}
	return out, nil
}

// printMessages prints msgs as JSON or YAML: one object when single, else a
// list.
func (a *app) printMessages(msgs []proto.Message, single bool) error {
	parts := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		raw, err := protoJSON(m)
		if err != nil {
			return err
		}
		parts = append(parts, raw)
	}
	var raw []byte
	if single && len(parts) == 1 {
		raw = parts[0]
	} else {
		raw = append(append([]byte("["), bytes.Join(parts, []byte(","))...), ']')
	}
	return a.printJSON(a.stdout, raw)
}

// printValue prints a plain Go value as JSON or YAML.
func (a *app) printValue(v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.printJSON(a.stdout, raw)
}

// printJSON writes JSON text to w in the chosen format: indented JSON, or
// YAML with the same key order.
func (a *app) printJSON(w io.Writer, raw []byte) error {
	if a.output == formatYAML {
		return writeYAML(w, raw)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

// writeStruct writes a free-form object (a spec, a status, an input) as
// YAML with sorted keys.
func writeStruct(w io.Writer, s *structpb.Struct) error {
	raw, err := protoJSON(s)
	if err != nil {
		return err
	}
	return writeYAML(w, raw)
}

func writeYAML(w io.Writer, raw []byte) error {
	n, err := yamlNode(raw)
	if err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return err
	}
	return enc.Close()
}

// yamlNode converts JSON text to a YAML node tree, keeping key order.
func yamlNode(raw []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	return yamlValue(dec)
}

func yamlValue(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		if t == '{' {
			n = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		}
		for dec.More() {
			if n.Kind == yaml.MappingNode {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(key)})
			}
			v, err := yamlValue(dec)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t}
		if yaml11Bool(t) {
			n.Style = yaml.DoubleQuotedStyle // YAML 1.1 readers would take it for a boolean
		}
		return n, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(t.String(), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: t.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t)}, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
}

func yaml11Bool(s string) bool {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off":
		return true
	}
	return false
}

// table writes aligned columns.
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(&trimWriter{w: w}, 0, 8, 3, ' ', 0)}
	t.row(header...)
	return t
}

// row writes one row; an empty cell shows as "-".
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	t.blankRow(cells...)
}

// blankRow writes one row as given: an empty cell stays blank. It suits
// rows that are a note rather than data, such as "... and 3 more".
func (t *table) blankRow(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, oneLine.Replace(c))
	}
	io.WriteString(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

// cell shows an empty cell as "-".
func cell(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a cell on one line and out of tabwriter's way.
var oneLine = strings.NewReplacer("\t", " ", "\r", " ", "\n", " ")

// trimWriter drops the spaces at the end of each line, which tabwriter
// leaves when the last cells of a row are blank.
type trimWriter struct {
	w      io.Writer
	spaces int // held back until a character other than a newline follows
}

func (tw *trimWriter) Write(p []byte) (int, error) {
	var buf bytes.Buffer
	for _, c := range p {
		switch c {
		case ' ':
			tw.spaces++
			continue
		case '\n':
			tw.spaces = 0
		default:
			buf.WriteString(strings.Repeat(" ", tw.spaces))
			tw.spaces = 0
		}
		buf.WriteByte(c)
	}
	if _, err := tw.w.Write(buf.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// truncate shortens s to at most n runes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// age is how long ago ts was, the way kubectl shows it: 45s, 12m, 5h, 3d, 2y.
func age(now time.Time, ts *timestamppb.Timestamp) string {
	if ts == nil {
		return "-"
	}
	return shortDuration(now.Sub(ts.AsTime()))
}

func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d < 2*365*24*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	return fmt.Sprintf("%dy", int(d.Hours()/24/365))
}
