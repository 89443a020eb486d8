package taskrec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// Document returns a stored record's input and result as the JSON
// documents readers see; kind is the record's resource's kind. The
// input: kind, kind_version, reaction, spec, status, labels, config
// (secret-looking values redacted, see Redact), flowed, operation or
// reactor (the payload). The result: status, unhealthy, conditions,
// operation_output, children, error ({message, terminal, reason,
// retry_after}), server_error. A part cut to fit the byte budget reads
// {"omitted_bytes": N}.
func Document(kind string, input, result []byte) (in, out []byte, err error) {
	if in, err = document(kind, input); err != nil {
		return nil, nil, fmt.Errorf("input: %w", err)
	}
	if out, err = document("", result); err != nil {
		return nil, nil, fmt.Errorf("result: %w", err)
	}
	return in, out, nil
}

func document(kind string, stored []byte) ([]byte, error) {
	switch {
	case len(stored) == 0:
		return []byte("{}"), nil
	case stored[0] == '{':
		return stored, nil
	case stored[0] != formatParts:
		return nil, fmt.Errorf("unknown format %d", stored[0])
	}
	parts, err := readParts(stored)
	if err != nil {
		return nil, err
	}
	d := doc{}
	d.str("kind", kind)
	var conditions []json.RawMessage
	for _, p := range parts {
		name := p.k.name()
		switch {
		case name == "":
			// A part a newer server writes: a reader during an upgrade
			// leaves it out.
		case p.wasCut:
			d[name] = json.RawMessage(fmt.Sprintf(`{"omitted_bytes":%d}`, p.cut))
		case p.k == keyKindVersion:
			v, w := binary.Uvarint(p.b)
			if w <= 0 {
				return nil, fmt.Errorf("%s: unreadable number", name)
			}
			d.set(name, v)
		case p.k == keyReaction || p.k == keyServerError:
			d.set(name, string(p.b))
		case p.k == keyLabels:
			var m map[string]string
			if json.Unmarshal(p.b, &m) != nil {
				d.raw(name, p.b)
			} else if len(m) > 0 {
				d.set(name, m)
			}
		case p.k == keyConfig:
			d.set(name, Redact(p.b))
		case p.k == keyUnhealthy:
			d.set(name, true)
		case p.k == keyCondition:
			var c convergev1.Condition
			if err := proto.Unmarshal(p.b, &c); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			conditions = append(conditions, marshalMsg(&c))
		case p.k == keyError:
			e, err := errorOf(p.b)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			d.set(name, e)
		default:
			d.raw(name, p.b)
		}
	}
	if len(conditions) > 0 {
		d.set("conditions", conditions)
	}
	return d.bytes(), nil
}

// name is the JSON key a part becomes ("" for a key this server does not
// know).
func (k key) name() string {
	switch k {
	case keyKindVersion:
		return "kind_version"
	case keyReaction:
		return "reaction"
	case keySpec:
		return "spec"
	case keyStatus, keyResultStatus:
		return "status"
	case keyLabels:
		return "labels"
	case keyConfig:
		return "config"
	case keyFlowed:
		return "flowed"
	case keyOperation:
		return "operation"
	case keyReactor:
		return "reactor"
	case keyUnhealthy:
		return "unhealthy"
	case keyCondition:
		return "conditions"
	case keyOperationOutput:
		return "operation_output"
	case keyChildren:
		return "children"
	case keyError:
		return "error"
	case keyServerError:
		return "server_error"
	}
	return ""
}

func errorOf(b []byte) (map[string]any, error) {
	var f convergev1.TaskError
	if err := proto.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	e := map[string]any{"message": f.GetMessage(), "terminal": f.GetTerminal()}
	if f.GetReason() != "" {
		e["reason"] = f.GetReason()
	}
	if f.GetRetryAfter() != nil {
		e["retry_after"] = f.GetRetryAfter().AsDuration().String()
	}
	return e, nil
}

// doc is a JSON object being assembled, its values already encoded.
type doc map[string]json.RawMessage

// raw sets a value stored as JSON, left out if it is not.
func (d doc) raw(key string, v []byte) {
	if len(v) > 0 && json.Valid(v) {
		d[key] = json.RawMessage(v)
	}
}

func (d doc) str(key, v string) {
	if v != "" {
		d.set(key, v)
	}
}

func (d doc) set(key string, v any) {
	if b, err := json.Marshal(v); err == nil {
		d[key] = b
	}
}

// bytes encodes d with its keys in order. Every value is valid JSON
// already (encoded by set, or checked by raw), so it is copied as it is.
func (d doc) bytes() []byte {
	keys := make([]string, 0, len(d))
	n := 2
	for k, v := range d {
		keys = append(keys, k)
		n += len(k) + 4 + len(v)
	}
	sort.Strings(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		b = append(b, d[k]...)
	}
	return append(b, '}')
}

func marshalMsg(m proto.Message) json.RawMessage {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}
