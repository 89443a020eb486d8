package taskrec

import (
	"encoding/json"
	"fmt"
	"sort"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// childNames is how many of a composer's children a record names.
const childNames = 5

// build turns a finished Pending into the row to write. The input
// document holds what the worker was sent: reaction, spec, status,
// labels, config (redacted), the flowed values ({to, from|expr, value},
// read at each flow's pointer in the spec as sent), and an operation's
// or a reactor delivery's payload. The result document holds what it
// returned: status, unhealthy, conditions, children ({count, names}),
// error ({message, terminal, reason, retry_after}), operation_output, and
// server_error when the server failed the task itself (a result breaking
// the kind's contract, a refused composition, a missed deadline).
func build(p *Pending, flows [][]byte, maxBytes int, configs redactions) store.TaskRecord {
	c, t := p.claimed, p.task
	rec := store.TaskRecord{
		ResourceID: c.ResourceID, TaskID: c.TaskID, Trigger: c.Trigger, Generation: c.Generation,
		Attempt: c.Attempt, Worker: p.worker, Session: p.session, ClaimedAt: p.claimedAt,
		DispatchedAt: p.dispatchedAt, EndedAt: p.endedAt, Outcome: p.outcome, DiscardReason: p.why,
		Failed: p.out.Failed, Terminal: p.out.Terminal, ErrorReason: p.out.Reason, Error: p.out.Message,
		Children: int32(len(p.children)),
	}
	if rec.Outcome != store.RecordApplied {
		// Nothing was applied: the columns tell what the worker said.
		rec.Failed, rec.Terminal, rec.ErrorReason, rec.Error = false, false, "", ""
		if f := p.returned.GetError(); f != nil {
			rec.Failed, rec.Terminal, rec.ErrorReason, rec.Error = true, f.GetTerminal(), f.GetReason(), f.GetMessage()
		}
	}
	in := doc{}
	in.str("kind", t.GetKind())
	in.set("kind_version", t.GetKindVersion())
	in.str("reaction", t.GetReaction())
	if res := t.GetResource(); res != nil {
		in.own("spec", res.GetSpec())
		in.own("status", res.GetStatus())
		if len(res.GetLabels()) > 0 {
			in.set("labels", res.GetLabels())
		}
		if fl := flowed(res.GetSpec(), flows); len(fl) > 0 {
			in.set("flowed", fl)
		}
	}
	if cfg := t.GetConfig(); len(cfg) > 0 {
		in["config"] = configs.of(cfg)
	}
	in.msg("operation", t.GetOperation())
	in.msg("reactor", t.GetReactor())

	out := doc{}
	if ok := p.returned.GetSuccess(); ok != nil {
		out.raw("status", ok.GetStatus())
		if ok.GetUnhealthy() {
			out.set("unhealthy", true)
		}
		if len(ok.GetConditions()) > 0 {
			var list []json.RawMessage
			for _, cond := range ok.GetConditions() {
				list = append(list, marshalMsg(cond))
			}
			out.set("conditions", list)
		}
		out.raw("operation_output", ok.GetOperationOutput())
	}
	if len(p.children) > 0 {
		names := []string{}
		for _, ch := range p.children[:min(len(p.children), childNames)] {
			names = append(names, ch.Kind+"/"+ch.Name)
		}
		out.set("children", map[string]any{"count": len(p.children), "names": names})
	}
	if f := p.returned.GetError(); f != nil {
		e := map[string]any{"message": f.GetMessage(), "terminal": f.GetTerminal()}
		if f.GetReason() != "" {
			e["reason"] = f.GetReason()
		}
		if f.GetRetryAfter() != nil {
			e["retry_after"] = f.GetRetryAfter().AsDuration().String()
		}
		out.set("error", e)
	} else if p.out.Failed {
		out.str("server_error", p.out.Message)
	}
	rec.Truncated = fit(in, out, maxBytes)
	rec.Input, rec.Result = in.bytes(), out.bytes()
	return rec
}

// fit cuts the documents to maxBytes together, dropping the largest
// parts first in an order that keeps the most telling ones (the error,
// the flowed values, the children) longest. It reports whether it cut.
func fit(in, out doc, maxBytes int) bool {
	size := in.size() + out.size()
	if size <= maxBytes {
		return false
	}
	for _, part := range []struct {
		d   doc
		key string
	}{
		{in, "status"}, {out, "status"}, {out, "operation_output"}, {in, "reactor"}, {in, "operation"},
		{in, "spec"}, {in, "config"}, {out, "conditions"}, {in, "labels"}, {in, "flowed"}, {out, "error"},
		{out, "server_error"},
	} {
		if size <= maxBytes {
			break
		}
		if v, ok := part.d[part.key]; ok {
			marker := json.RawMessage(fmt.Sprintf(`{"omitted_bytes":%d}`, len(v)))
			part.d[part.key] = marker
			size -= len(v) - len(marker)
		}
	}
	return true
}

// flowed reads, for each flow into the resource, the value its pointer
// holds in the spec as sent.
func flowed(spec []byte, flows [][]byte) []map[string]any {
	if len(flows) == 0 || len(spec) == 0 {
		return nil
	}
	doc, err := schema.Decode(spec)
	if err != nil {
		return nil
	}
	var list []map[string]any
	for _, raw := range flows {
		var fs []struct {
			From string `json:"from"`
			Expr string `json:"expr"`
			To   string `json:"to"`
		}
		if json.Unmarshal(raw, &fs) != nil {
			continue
		}
		for _, f := range fs {
			ptr, err := flow.ParsePointer(f.To)
			if err != nil {
				continue
			}
			item := map[string]any{"to": f.To}
			if f.Expr != "" {
				item["expr"] = f.Expr
			} else {
				item["from"] = f.From
			}
			if v, ok := ptr.Get(doc); ok {
				item["value"] = v
			}
			list = append(list, item)
		}
	}
	return list
}

// doc is a JSON object being built, its values already encoded.
type doc map[string]json.RawMessage

func (d doc) raw(key string, v []byte) {
	if len(v) > 0 && json.Valid(v) {
		d[key] = json.RawMessage(v)
	}
}

// own sets a value the server encoded itself (the spec and status it
// read from the database): valid JSON, so it is not checked again.
func (d doc) own(key string, v []byte) {
	if len(v) > 0 {
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

func (d doc) msg(key string, m proto.Message) {
	if m != nil && m.ProtoReflect().IsValid() {
		d[key] = marshalMsg(m)
	}
}

// size is about the length of d encoded, without encoding it: its
// values' lengths, for each key its quoted name, a colon and a comma (keys
// here need no escaping), and the braces. It counts one comma too many.
func (d doc) size() int {
	n := 2
	for k, v := range d {
		n += len(k) + 4 + len(v)
	}
	return n
}

// bytes encodes d with its keys in order. Every value is valid JSON
// already (encoded by set, or checked by raw), so it is copied as it is:
// encoding/json would validate and compact each one again.
func (d doc) bytes() []byte {
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := make([]byte, 0, d.size())
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
