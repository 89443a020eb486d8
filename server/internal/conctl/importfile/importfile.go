// Package importfile reads the file conctl import takes: one row per
// existing external object to bring under management, naming the kind and
// name of the resource that adopts it and the object's id. Two formats:
//
//   - CSV with a header row. Columns kind, name and id are required;
//     namespace, kind_version, policy (full or observe) and spec (a JSON
//     object) are optional. Unknown columns are refused.
//   - JSON Lines: one JSON object per line with the same keys (spec an
//     object, kind_version a number). Blank lines are skipped.
//
// A source ending in .csv is CSV, one ending in .jsonl, .ndjson or .json
// is JSON Lines; otherwise data whose first non-blank character is '{' is
// JSON Lines, and anything else CSV. Every problem is reported, naming
// the row (its line) and the field.
package importfile

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxSize is the largest file accepted, in bytes.
const MaxSize = 32 << 20

// MaxRows is the most rows one file may hold.
const MaxRows = 100_000

// MaxIDLength is the longest id accepted (the server's limit on an
// import id).
const MaxIDLength = 1024

// maxErrors caps the problems reported: past that many, the rest are
// likely the same mistake again.
const maxErrors = 20

// Row is one object to adopt.
type Row struct {
	// Line is where the row starts in the file (1-based).
	Line      int
	Namespace string // "" = conctl's namespace
	Kind      string
	// KindVersion is 0 when the row does not say (conctl picks one).
	KindVersion int32
	Name        string
	ID          string
	// Policy is "", "full" or "observe" ("" = conctl's --policy).
	Policy string
	// Spec is a JSON object, or nil for an empty spec.
	Spec json.RawMessage
}

// Columns are the fields a row may have, required ones first.
var Columns = []string{"kind", "name", "id", "namespace", "kind_version", "policy", "spec"}

var required = []string{"kind", "name", "id"}

// Parse reads the rows of data, which came from source (a path, or
// "stdin"). It returns the rows, or an error listing every problem found.
func Parse(source string, data []byte) ([]Row, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: larger than the %d MiB limit", source, MaxSize>>20)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	p := &parser{source: source}
	if isJSONLines(source, data) {
		p.jsonLines(data)
	} else {
		p.csv(data)
	}
	if len(p.rows) == 0 && len(p.errs) == 0 {
		p.fail(0, "", "no rows: want a row per object to import (kind, name, id)")
	}
	p.duplicates()
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return p.rows, nil
}

func isJSONLines(source string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(source)) {
	case ".csv":
		return false
	case ".jsonl", ".ndjson", ".json":
		return true
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

type parser struct {
	source string
	rows   []Row
	errs   []error
}

// full reports whether enough problems were found to stop.
func (p *parser) full() bool { return len(p.errs) >= maxErrors }

func (p *parser) fail(line int, field, format string, args ...any) {
	if p.full() {
		return
	}
	where := p.source
	if line > 0 {
		where += fmt.Sprintf(": row at line %d", line)
	}
	if field != "" {
		where += ": " + field
	}
	p.errs = append(p.errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	if p.full() {
		p.errs = append(p.errs, fmt.Errorf("%s: stopped after %d problems", p.source, maxErrors))
	}
}

func (p *parser) add(r Row) {
	if len(p.rows) == MaxRows {
		p.fail(r.Line, "", "more than %d rows; split the file", MaxRows)
		return
	}
	p.rows = append(p.rows, r)
}

func (p *parser) csv(data []byte) {
	rd := csv.NewReader(bytes.NewReader(data))
	rd.FieldsPerRecord = -1
	rd.TrimLeadingSpace = true
	header, err := rd.Read()
	if errors.Is(err, io.EOF) {
		return
	}
	if err != nil {
		p.fail(1, "", "%s", csvMessage(err))
		return
	}
	index := map[string]int{}
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		switch {
		case !known(name):
			p.fail(1, "header", "column %d %q is not one of %s", i+1, h, strings.Join(Columns, ", "))
		case index[name] > 0:
			p.fail(1, "header", "column %q appears twice", name)
		default:
			index[name] = i + 1
		}
	}
	for _, c := range required {
		if index[c] == 0 {
			p.fail(1, "header", "no %q column: the header names the columns, and %s are required", c, strings.Join(required, ", "))
		}
	}
	if len(p.errs) > 0 {
		return
	}
	for !p.full() {
		line, _ := rd.FieldPos(0)
		rec, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			p.fail(line, "", "%s", csvMessage(err))
			return
		}
		line, _ = rd.FieldPos(0)
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue // a blank line
		}
		if len(rec) > len(header) {
			p.fail(line, "", "%d fields, but the header names %d columns", len(rec), len(header))
			continue
		}
		field := func(name string) (string, bool) {
			i := index[name]
			if i == 0 || i > len(rec) {
				return "", false
			}
			return strings.TrimSpace(rec[i-1]), true
		}
		p.row(line, field)
	}
}

// csvMessage is a CSV reader's error without its position, which the
// caller gives as the row's line.
func csvMessage(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return "invalid CSV: " + pe.Err.Error()
	}
	return "invalid CSV: " + err.Error()
}

func known(column string) bool {
	for _, c := range Columns {
		if c == column {
			return true
		}
	}
	return false
}

func (p *parser) jsonLines(data []byte) {
	for n, raw := range bytes.Split(data, []byte("\n")) {
		if p.full() {
			return
		}
		line := n + 1
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(raw))
		if err := dec.Decode(&obj); err != nil || obj == nil {
			p.fail(line, "", "not a JSON object: %s", jsonMessage(err))
			continue
		}
		if dec.More() {
			p.fail(line, "", "more than one JSON value on the line: want one object per line")
			continue
		}
		bad := false
		for k := range obj {
			if !known(k) {
				p.fail(line, k, "not a field of a row; the fields are %s", strings.Join(Columns, ", "))
				bad = true
			}
		}
		if bad {
			continue
		}
		p.row(line, func(name string) (string, bool) {
			v, ok := obj[name]
			if !ok {
				return "", false
			}
			if name == "spec" {
				return string(v), true
			}
			var s string
			if err := json.Unmarshal(v, &s); err == nil {
				return strings.TrimSpace(s), true
			}
			if name == "kind_version" {
				return string(v), true // a number
			}
			return "\x00" + string(v), true // not a string: refused below
		})
	}
}

func jsonMessage(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

// row checks one row's fields, read through field, and adds it.
func (p *parser) row(line int, field func(string) (string, bool)) {
	r := Row{Line: line}
	ok := true
	str := func(name string, required bool) string {
		v, has := field(name)
		switch {
		case strings.HasPrefix(v, "\x00"):
			p.fail(line, name, "must be a string, not %s", truncate(v[1:]))
			ok = false
			return ""
		case required && (!has || v == ""):
			p.fail(line, name, "empty: every row names its kind, name and id")
			ok = false
		}
		return v
	}
	r.Kind, r.Name, r.ID = str("kind", true), str("name", true), str("id", true)
	r.Namespace, r.Policy = str("namespace", false), str("policy", false)
	if len(r.ID) > MaxIDLength {
		p.fail(line, "id", "%d bytes; the limit is %d", len(r.ID), MaxIDLength)
		ok = false
	}
	if r.Policy != "" && r.Policy != "full" && r.Policy != "observe" {
		p.fail(line, "policy", "%q is not one of full, observe (or leave it empty for --policy)", truncate(r.Policy))
		ok = false
	}
	if v, has := field("kind_version"); has && v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			p.fail(line, "kind_version", "%q is not a version: want a whole number of at least 1", truncate(v))
			ok = false
		}
		r.KindVersion = int32(n)
	}
	if v, has := field("spec"); has && v != "" && v != "null" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
			p.fail(line, "spec", "must be a JSON object, e.g. {\"size\": 3}")
			ok = false
		} else {
			r.Spec = json.RawMessage(v)
		}
	}
	if ok {
		p.add(r)
	}
}

func truncate(s string) string {
	const most = 64
	if len(s) <= most {
		return s
	}
	return s[:most] + "…"
}

// duplicates refuses two rows for one resource, or one object adopted
// twice by the same kind.
func (p *parser) duplicates() {
	names := map[[3]string]int{}
	ids := map[[2]string]int{}
	for _, r := range p.rows {
		k := [3]string{r.Namespace, r.Kind, r.Name}
		if first, dup := names[k]; dup {
			p.fail(r.Line, "name", "%s/%s is already imported by the row at line %d", r.Kind, r.Name, first)
		} else {
			names[k] = r.Line
		}
		id := [2]string{r.Kind, r.ID}
		if first, dup := ids[id]; dup {
			p.fail(r.Line, "id", "%q is already imported as a %s by the row at line %d", truncate(r.ID), r.Kind, first)
		} else {
			ids[id] = r.Line
		}
	}
}
