package taskrec

import (
	"encoding/binary"
	"encoding/json"

	"google.golang.org/protobuf/proto"

	"github.com/convergehq/converge/server/internal/flow"
	"github.com/convergehq/converge/server/internal/schema"
	"github.com/convergehq/converge/server/internal/store"
)

// childNames is how many of a composer's children a record names.
const childNames = 5

// Input is what a task was sent, in the forms the broker loaded from the
// database: never the message as it went to the worker, so that a
// record holds no value the server made clear for the worker alone (a
// secret field stays the envelope it is stored as).
type Input struct {
	KindVersion int32
	Reaction    string
	// Spec, Status and Labels are nil for a task that carries no resource.
	Spec, Status, Labels []byte
	// Config is the effective provider config as stored.
	Config []byte
	// Operation and Reactor are the stored payload of an operation task or
	// of a reactor delivery.
	Operation, Reactor []byte
}

// encoder builds a batch's records into buffers it reuses from batch to
// batch: a record costs the writer a copy of the parts it is made of
// (see format.go), and the JSON documents are assembled only when read.
type encoder struct {
	buf     []byte // the batch's stored documents
	scratch []byte // values encoded for parts: kind version, protobuf, built JSON
	parts   []part
}

// reset makes the buffers reusable: the records of the last batch must
// have been written.
func (e *encoder) reset() { e.buf, e.scratch = e.buf[:0], e.scratch[:0] }

// add adds a part unless b is empty; keep adds it even then.
func (e *encoder) add(k key, b []byte) {
	if len(b) > 0 {
		e.keep(k, b)
	}
}

func (e *encoder) keep(k key, b []byte) { e.parts = append(e.parts, part{k, b}) }

func (e *encoder) text(k key, s string) {
	if s != "" {
		start := len(e.scratch)
		e.scratch = append(e.scratch, s...)
		e.keep(k, e.scratch[start:])
	}
}

func (e *encoder) uvarint(k key, v uint64) {
	start := len(e.scratch)
	e.scratch = binary.AppendUvarint(e.scratch, v)
	e.keep(k, e.scratch[start:])
}

func (e *encoder) proto(k key, m proto.Message) {
	start := len(e.scratch)
	b, err := proto.MarshalOptions{}.MarshalAppend(e.scratch, m)
	if err != nil {
		return
	}
	e.scratch = b
	e.keep(k, e.scratch[start:])
}

func (e *encoder) json(k key, v any) {
	if b, err := json.Marshal(v); err == nil {
		e.keep(k, b)
	}
}

// build turns a finished Pending into the row to write. The input holds
// what the worker was sent: kind version, reaction, spec, status,
// labels, config, the flowed values ({to, from|expr, value}, read at each
// flow's pointer in the spec as sent), and an operation's or a reactor
// delivery's payload. The result holds what it returned: status,
// unhealthy, conditions, children ({count, names}), error, operation
// output, and server_error when the server failed the task itself (a
// result breaking the kind's contract, a refused composition, a missed
// deadline).
func (e *encoder) build(p *Pending, flows [][]byte, maxBytes int) store.TaskRecord {
	c := p.claimed
	rec := store.TaskRecord{
		ResourceID: c.resourceID, TaskID: c.taskID, Trigger: c.trigger, Generation: c.generation,
		Attempt: c.attempt, Worker: p.worker, Session: p.session, ClaimedAt: p.claimedAt,
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
	e.parts = e.parts[:0]
	in := &p.input
	e.uvarint(keyKindVersion, uint64(uint32(in.KindVersion)))
	e.text(keyReaction, in.Reaction)
	e.add(keySpec, in.Spec)
	e.add(keyStatus, in.Status)
	e.add(keyLabels, in.Labels)
	if fl := flowed(in.Spec, flows); len(fl) > 0 {
		e.json(keyFlowed, fl)
	}
	e.add(keyConfig, in.Config)
	e.add(keyOperation, in.Operation)
	e.add(keyReactor, in.Reactor)

	if ok := p.returned.GetSuccess(); ok != nil {
		e.add(keyResultStatus, ok.GetStatus())
		if ok.GetUnhealthy() {
			e.keep(keyUnhealthy, nil)
		}
		for _, cond := range ok.GetConditions() {
			e.proto(keyCondition, cond)
		}
		e.add(keyOperationOutput, ok.GetOperationOutput())
	}
	if len(p.children) > 0 {
		names := []string{}
		for _, ch := range p.children[:min(len(p.children), childNames)] {
			names = append(names, ch.Kind+"/"+ch.Name)
		}
		e.json(keyChildren, map[string]any{"count": len(p.children), "names": names})
	}
	if f := p.returned.GetError(); f != nil {
		start := len(e.parts)
		e.proto(keyError, f)
		if len(e.parts) == start {
			e.keep(keyError, nil)
		}
	} else if p.out.Failed {
		e.text(keyServerError, p.out.Message)
	}
	rec.Truncated = e.fit(maxBytes)

	start := len(e.buf)
	e.buf = appendDoc(e.buf, e.parts, false)
	mid := len(e.buf)
	e.buf = appendDoc(e.buf, e.parts, true)
	rec.Input, rec.Result = e.buf[start:mid:mid], e.buf[mid:]
	return rec
}

// cutOrder is the order parts are cut in to fit the budget: the largest
// and least telling first, the error, the flowed values and the children
// last (a composer's children and the summary are never cut).
var cutOrder = []key{
	keyStatus, keyResultStatus, keyOperationOutput, keyReactor, keyOperation, keySpec, keyConfig,
	keyCondition, keyLabels, keyFlowed, keyError, keyServerError,
}

// fit cuts parts, in cutOrder, until the input and result fit maxBytes
// together, each cut part replaced by its length. It reports whether it
// cut.
func (e *encoder) fit(maxBytes int) bool {
	size := 2 // the two documents' format bytes
	for _, p := range e.parts {
		size += p.size()
	}
	if size <= maxBytes {
		return false
	}
	for _, k := range cutOrder {
		if size <= maxBytes {
			break
		}
		size += e.cut(k)
	}
	return true
}

// cut replaces the parts keyed k (a record's conditions are several)
// with one cut part, returning by how much that changed the size.
func (e *encoder) cut(k key) int {
	delta, total, found := 0, 0, false
	kept := e.parts[:0]
	for _, p := range e.parts {
		if p.k == k {
			delta -= p.size()
			total += len(p.b)
			found = true
			continue
		}
		kept = append(kept, p)
	}
	e.parts = kept
	if !found {
		return 0
	}
	start := len(e.scratch)
	e.scratch = binary.AppendUvarint(e.scratch, uint64(total))
	marker := part{key(byte(k) | cutFlag), e.scratch[start:]}
	e.parts = append(e.parts, marker)
	return delta + marker.size()
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
