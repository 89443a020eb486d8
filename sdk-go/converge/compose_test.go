package converge

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// zone returns a composer's answer shaped like the landing-zone example:
// n accounts and n VPCs, each VPC depending on its account with a flow.
func zone(n int) *Result {
	res := &Result{Compose: true, Status: map[string]int{"accounts": n}}
	for i := range n {
		acct := Child{Kind: "account", KindVersion: 1, Name: fmt.Sprintf("lz-acct-%d", i),
			Spec: map[string]any{"email": fmt.Sprintf("lz-acct-%d@example.com", i), "index": i}}
		vpc := Child{Kind: "vpc", KindVersion: 1, Name: fmt.Sprintf("lz-vpc-%d", i),
			Labels: map[string]string{"zone": "lz"}, Spec: map[string]any{"cidr": "10.0.0.0/16", "account_id": ""}}
		res.Children = append(res.Children, acct, vpc)
		res.Edges = append(res.Edges, DependsOn(vpc.Ref(), acct.Ref(), FlowFrom("/account_id", "/account_id")))
	}
	return res
}

// composeTask is a task for kind zone v1, reaction compose; its dedup
// token is its id.
func composeTask(id int64) *convergev1.Task {
	task := greetingTask(id, `{}`)
	task.Kind, task.Reaction, task.DedupToken = "zone", "compose", strconv.FormatInt(id, 10)
	return task
}

// composed is what the worker sent for one lease: its chunks and its result.
type composed struct {
	chunks []*convergev1.ComposeChunk
	result *convergev1.TaskResult
	// sizes of the messages carrying the chunks and the result, in order.
	sizes []int
}

// composedFor collects what the worker sent for task id in msgs (one
// stream's), checking the order rule: the chunks, indexed from 0, then the
// result, with no other message for the task in between or after.
func composedFor(t *testing.T, msgs []*convergev1.WorkerMessage, id int64) composed {
	t.Helper()
	var c composed
	for _, m := range msgs {
		if ch := m.GetComposeChunk(); ch != nil && ch.GetLease().GetTaskId() == id {
			if c.result != nil {
				t.Fatalf("task %d: chunk %d sent after the result", id, ch.GetIndex())
			}
			if int(ch.GetIndex()) != len(c.chunks) {
				t.Fatalf("task %d: chunk index %d where %d was due", id, ch.GetIndex(), len(c.chunks))
			}
			c.chunks = append(c.chunks, ch)
			c.sizes = append(c.sizes, proto.Size(m))
		}
		for _, r := range m.GetResults().GetResults() {
			if r.GetLease().GetTaskId() != id {
				continue
			}
			if c.result != nil {
				t.Fatalf("task %d: a second result", id)
			}
			c.result = r
			c.sizes = append(c.sizes, proto.Size(m))
		}
	}
	if c.result == nil {
		t.Fatalf("task %d: no result", id)
	}
	return c
}

// assembled joins the parts: the chunks in order, then the result's.
func (c composed) assembled() *convergev1.Composition {
	all := &convergev1.Composition{}
	parts := make([]*convergev1.Composition, 0, len(c.chunks)+1)
	for _, ch := range c.chunks {
		parts = append(parts, ch.GetPart())
	}
	parts = append(parts, c.result.GetSuccess().GetComposition())
	for _, p := range parts {
		all.Children = append(all.Children, p.GetChildren()...)
		all.Edges = append(all.Edges, p.GetEdges()...)
		all.References = append(all.References, p.GetReferences()...)
	}
	return all
}

// composeWait bounds the wait for a composer's result. Encoding,
// validating and sending 10,000 children takes about a second under the
// race detector, and several on a busy machine.
const composeWait = 6 * waitFor

// waitResults waits until the worker sent results for all of ids.
func waitResults(t *testing.T, s *fakeSession, ids ...int64) {
	t.Helper()
	pending := slices.Clone(ids)
	for len(pending) > 0 {
		r := resultOf(s.nextWithin(t, composeWait, "a composer's result", func(m *convergev1.WorkerMessage) bool { return resultOf(m) != nil }))
		pending = slices.DeleteFunc(pending, func(id int64) bool { return id == r.GetLease().GetTaskId() })
	}
}

func TestComposeSmallCompositionInOneMessage(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("zone", 1, "compose", func(context.Context, *Task) (*Result, error) {
		res := zone(2)
		res.References = []Ref{{Namespace: "shared", Kind: "dns.zone", Name: "corp"}}
		res.Edges = append(res.Edges, DependsOn(RefTo("vpc", "lz-vpc-0"), res.References[0],
			FlowExpr(`status.domain + ".internal"`, "/dns/domain")))
		return res, nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, composeTask(1))
	waitResults(t, s, 1)

	c := composedFor(t, s.raw(), 1)
	if len(c.chunks) != 0 || c.result.GetSuccess().GetComposeChunks() != 0 {
		t.Fatalf("sent %d chunks, compose_chunks %d; want the composition in the result alone",
			len(c.chunks), c.result.GetSuccess().GetComposeChunks())
	}
	success := c.result.GetSuccess()
	if string(success.GetStatus()) != `{"accounts":2}` {
		t.Errorf("status = %s", success.GetStatus())
	}
	comp := success.GetComposition()
	var children []string
	for _, ch := range comp.GetChildren() {
		children = append(children, fmt.Sprintf("%s/%d/%s %s %v", ch.GetKind(), ch.GetKindVersion(), ch.GetName(), ch.GetSpec(), ch.GetLabels()))
	}
	want := []string{
		`account/1/lz-acct-0 {"email":"lz-acct-0@example.com","index":0} map[]`,
		`vpc/1/lz-vpc-0 {"account_id":"","cidr":"10.0.0.0/16"} map[zone:lz]`,
		`account/1/lz-acct-1 {"email":"lz-acct-1@example.com","index":1} map[]`,
		`vpc/1/lz-vpc-1 {"account_id":"","cidr":"10.0.0.0/16"} map[zone:lz]`,
	}
	if !slices.Equal(children, want) {
		t.Errorf("children:\n%s\nwant:\n%s", strings.Join(children, "\n"), strings.Join(want, "\n"))
	}
	var edges []string
	for _, e := range comp.GetEdges() {
		line := fmt.Sprintf("%s/%s -> %s/%s/%s", e.GetDependent().GetKind(), e.GetDependent().GetName(),
			e.GetDependency().GetNamespace(), e.GetDependency().GetKind(), e.GetDependency().GetName())
		for _, fl := range e.GetFlows() {
			line += fmt.Sprintf(" [from=%q expr=%q to=%q]", fl.GetFrom(), fl.GetExpr(), fl.GetTo())
		}
		edges = append(edges, line)
	}
	wantEdges := []string{
		`vpc/lz-vpc-0 -> /account/lz-acct-0 [from="/account_id" expr="" to="/account_id"]`,
		`vpc/lz-vpc-1 -> /account/lz-acct-1 [from="/account_id" expr="" to="/account_id"]`,
		`vpc/lz-vpc-0 -> shared/dns.zone/corp [from="" expr="status.domain + \".internal\"" to="/dns/domain"]`,
	}
	if !slices.Equal(edges, wantEdges) {
		t.Errorf("edges:\n%s\nwant:\n%s", strings.Join(edges, "\n"), strings.Join(wantEdges, "\n"))
	}
	if refs := comp.GetReferences(); len(refs) != 1 || refs[0].GetNamespace() != "shared" || refs[0].GetKind() != "dns.zone" || refs[0].GetName() != "corp" {
		t.Errorf("references = %v", refs)
	}
}

// largeZone is zone(accounts) with as many edges as children: each
// account also waits on a shared resource declared as a reference.
func largeZone(accounts int) *Result {
	res := zone(accounts)
	res.References = []Ref{{Namespace: "shared", Kind: "org", Name: "root"}}
	for i := range accounts {
		res.Edges = append(res.Edges, DependsOn(RefTo("account", fmt.Sprintf("lz-acct-%d", i)), res.References[0],
			FlowFrom("/org_id", "/org_id")))
	}
	return res
}

func TestComposeLargeCompositionIsChunked(t *testing.T) {
	// Task 1: 10,000 children and 10,000 edges. Task 2, at the same time,
	// a smaller one that still needs chunks: each one's parts must stay in
	// order whatever the other sends.
	accounts := map[int64]int{1: 5000, 2: 750}
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("zone", 1, "compose", func(_ context.Context, task *Task) (*Result, error) {
		id, _ := strconv.ParseInt(task.DedupToken, 10, 64)
		return largeZone(accounts[id]), nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, composeTask(1))
	s.task(t, composeTask(2))
	waitResults(t, s, 1, 2)

	for _, id := range []int64{1, 2} {
		c := composedFor(t, s.raw(), id)
		want := largeZone(accounts[id])
		n := len(c.chunks) + 1
		if id == 1 && (n < 10 || n > 20) {
			t.Errorf("task %d: the composition took %d messages; want 10 to 20", id, n)
		}
		if n < 2 {
			t.Errorf("task %d: the composition took %d messages; want chunks", id, n)
		}
		if got := c.result.GetSuccess().GetComposeChunks(); int(got) != len(c.chunks) {
			t.Errorf("task %d: compose_chunks = %d; want the %d chunks sent", id, got, len(c.chunks))
		}
		for i, size := range c.sizes {
			if size >= 1<<20 {
				t.Errorf("task %d: message %d is %d bytes; want under 1 MiB", id, i, size)
			}
		}
		all := c.assembled()
		if len(all.GetChildren()) != len(want.Children) || len(all.GetEdges()) != len(want.Edges) || len(all.GetReferences()) != 1 {
			t.Fatalf("task %d: assembled %d children, %d edges, %d references; want %d, %d, 1",
				id, len(all.GetChildren()), len(all.GetEdges()), len(all.GetReferences()), len(want.Children), len(want.Edges))
		}
		for i, ch := range all.GetChildren() {
			if ch.GetName() != want.Children[i].Name {
				t.Fatalf("task %d: child %d is %q; want %q (parts out of order)", id, i, ch.GetName(), want.Children[i].Name)
			}
		}
		for _, ch := range c.chunks {
			p := ch.GetPart()
			if len(p.GetChildren()) > maxPartChildren || len(p.GetEdges()) > maxPartEdges {
				t.Errorf("task %d: chunk %d holds %d children and %d edges; over the protocol's limits",
					id, ch.GetIndex(), len(p.GetChildren()), len(p.GetEdges()))
			}
		}
	}
}

func TestComposeEmptyCompositionIsNotALeafResult(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("zone", 1, "none", func(context.Context, *Task) (*Result, error) {
		return &Result{Compose: true}, nil
	})
	w.Handle("zone", 1, "computed-none", func(context.Context, *Task) (*Result, error) {
		return &Result{Compose: true, Children: []Child{}, Status: map[string]int{"accounts": 0}}, nil
	})
	w.Handle("zone", 1, "leaf", func(context.Context, *Task) (*Result, error) {
		return &Result{Status: map[string]int{"accounts": 0}}, nil
	})
	w.Handle("zone", 1, "empty-slice", func(context.Context, *Task) (*Result, error) {
		return &Result{Children: []Child{}}, nil // without Compose, a leaf's answer
	})
	w.Handle("zone", 1, "nil", nop)
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)

	for i, c := range []struct {
		reaction string
		compose  bool
	}{{"none", true}, {"computed-none", true}, {"leaf", false}, {"empty-slice", false}, {"nil", false}} {
		task := composeTask(int64(i + 1))
		task.Reaction = c.reaction
		s.task(t, task)
		r := s.result(t)
		success := r.GetSuccess()
		if success == nil {
			t.Fatalf("%s: result = %v; want success", c.reaction, r)
		}
		comp := success.GetComposition()
		if got := comp != nil; got != c.compose {
			t.Errorf("%s: composition sent = %v; want %v", c.reaction, got, c.compose)
		}
		if comp != nil && !isEmpty(comp) {
			t.Errorf("%s: composition = %v; want empty", c.reaction, comp)
		}
	}
}

func TestComposeInvalidChildIsTerminal(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("zone", 1, "compose", func(context.Context, *Task) (*Result, error) {
		res := zone(3000)
		res.Children[3].Name = "Vpc_1"
		return res, nil
	})
	w.run(t)
	s := f.accept(t)
	s.subscribed(t, nil, nil)
	s.task(t, composeTask(1))
	r := s.result(t)
	e := r.GetError()
	if e == nil || !e.GetTerminal() || !strings.Contains(e.GetMessage(), `children[3] "Vpc_1": name: "Vpc_1" must be lower-case`) {
		t.Fatalf("result = %v; want a terminal error naming children[3]", r)
	}
	for _, m := range s.raw() {
		if m.GetComposeChunk() != nil {
			t.Fatal("a chunk of the invalid composition was sent")
		}
	}
}

func TestComposeChunkedResultIsResentWholeAfterReconnect(t *testing.T) {
	f := newFakeServer(t)
	w := newTestWorker(f)
	w.Handle("zone", 1, "compose", func(context.Context, *Task) (*Result, error) {
		return zone(1500), nil // 3,000 children: three parts
	})
	w.run(t)
	s1 := f.accept(t)
	s1.subscribed(t, nil, nil)
	s1.task(t, composeTask(1))
	waitResults(t, s1, 1)
	first := composedFor(t, s1.raw(), 1)
	if len(first.chunks) != 2 {
		t.Fatalf("sent %d chunks; want 2 (and the last part in the result)", len(first.chunks))
	}
	// Not acknowledged: the stream breaks.
	s1.close()

	s2 := f.accept(t)
	if got := ids(s2.sub.GetResumed()); !slices.Equal(got, []int64{1}) {
		t.Fatalf("resumed = %v; want the unacknowledged composer result", got)
	}
	s2.subscribed(t, nil, nil)
	waitResults(t, s2, 1)
	again := composedFor(t, s2.raw(), 1)
	if len(again.chunks) != len(first.chunks) {
		t.Fatalf("re-sent %d chunks; want all %d again", len(again.chunks), len(first.chunks))
	}
	for i := range first.chunks {
		if !proto.Equal(first.chunks[i], again.chunks[i]) {
			t.Fatalf("re-sent chunk %d differs from the first sending", i)
		}
	}
	if !proto.Equal(first.result, again.result) {
		t.Fatal("re-sent result differs from the first sending")
	}
	s2.ack(t, lease(1))
	eventually(t, "the acknowledged result is forgotten", func() bool { return w.ledger.unacked() == 0 })
}
