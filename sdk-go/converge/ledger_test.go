package converge

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// finished records a result for task id as if its handler had run.
func finished(l *ledger, id int64) {
	ex := &execution{key: leaseKey{id, 1}, cancel: func() {}}
	l.mu.Lock()
	l.running[ex.key] = ex
	l.mu.Unlock()
	l.finish(ex, &report{result: errorResult(lease(id), "done", false)})
}

func TestLedgerResendsResultsInCompletionOrderInBatches(t *testing.T) {
	l := newLedger(1)
	const n = 600
	for id := int64(n); id >= 1; id-- { // completion order is n, n-1, ..., 1
		finished(l, id)
	}
	l.beginSession(nil)
	var got []int64
	for batch := 0; ; batch++ {
		msgs, more := l.takeUnsent(sendBatch)
		if len(msgs) > sendBatch {
			t.Fatalf("batch %d has %d results; want at most %d", batch, len(msgs), sendBatch)
		}
		for _, m := range msgs {
			got = append(got, m.result.GetLease().GetTaskId())
		}
		if !more {
			break
		}
	}
	if len(got) != n || got[0] != n || got[n-1] != 1 || !slices.IsSortedFunc(got, func(a, b int64) int { return int(b - a) }) {
		t.Fatalf("resent %d results starting %v; want all %d in completion order", len(got), got[:3], n)
	}
	// Results stay buffered until acknowledged.
	if l.unacked() != n {
		t.Fatalf("unacked = %d after sending; want %d", l.unacked(), n)
	}
}

func TestLedgerListsAtMostTheProtocolLimit(t *testing.T) {
	l := newLedger(1)
	l.maxUnacked = maxListed + 10
	for id := int64(1); id <= maxListed+5; id++ {
		finished(l, id)
	}
	if got := len(l.resumable()); got != maxListed {
		t.Fatalf("resumable lists %d leases; want the limit %d", got, maxListed)
	}
}

func TestLedgerRefusesTasksBeyondTheWaitingLimit(t *testing.T) {
	l := newLedger(1)
	l.maxWaiting = 2
	for id := int64(1); id <= 3; id++ { // 1 runs, 2 and 3 wait
		if _, err := l.accept(&convergev1.Task{Lease: lease(id)}, nop); err != nil {
			t.Fatalf("accept %d: %v", id, err)
		}
	}
	if _, err := l.accept(&convergev1.Task{Lease: lease(4)}, nop); err != errQueueFull {
		t.Fatalf("accept beyond the limit = %v; want errQueueFull", err)
	}
	if _, err := l.accept(&convergev1.Task{Lease: lease(2)}, nop); err != errDuplicate {
		t.Fatalf("accept of a held task = %v; want errDuplicate", err)
	}
}

func TestErrorResultBoundsAndCleansTheMessage(t *testing.T) {
	msg := errorResult(lease(1), strings.Repeat("é", maxErrorBytes), true).GetError().GetMessage()
	if len(msg) > maxErrorBytes+len(" …(truncated)") || !strings.HasSuffix(msg, " …(truncated)") {
		t.Fatalf("message of %d bytes not cut to the limit", len(msg))
	}
	if !strings.HasPrefix(msg, "éé") || strings.ContainsRune(msg, '\uFFFD') {
		t.Fatal("cutting the message split a character")
	}
}

func TestEncodeStatusNamesTheJSONType(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"x", "got a string"}, {true, "got a boolean"}, {1.5, "got a number"}, {[]int{}, "got an array"},
	} {
		if _, err := encodeStatus(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("encodeStatus(%#v) = %v; want an error containing %q", c.v, err, c.want)
		}
	}
}

func TestHeartbeatInterval(t *testing.T) {
	for _, c := range []struct {
		ms, lease int32
		want      time.Duration
	}{
		{ms: 1500, want: 1500 * time.Millisecond},
		{ms: 0, lease: 30, want: 10 * time.Second},
		{ms: 0, lease: 0, want: defaultHeartbeat},
		{ms: 1, want: minHeartbeat},
	} {
		got := heartbeatInterval(&convergev1.Subscribed{HeartbeatIntervalMs: c.ms, LeaseSeconds: c.lease})
		if got != c.want {
			t.Errorf("heartbeatInterval(%d ms, lease %d s) = %s; want %s", c.ms, c.lease, got, c.want)
		}
	}
}

func TestLedgerBatchesByMessagesAndKeepsReportsWhole(t *testing.T) {
	l := newLedger(1)
	chunked := func(id int64, n int) *report {
		rep := &report{result: errorResult(lease(id), "done", false)}
		for i := range n {
			rep.chunks = append(rep.chunks, &convergev1.ComposeChunk{Lease: lease(id), Index: int32(i)})
		}
		return rep
	}
	for id, n := range map[int64]int{1: 300, 2: 100, 3: 100, 4: 100, 5: 0} {
		ex := &execution{key: leaseKey{id, 1}, cancel: func() {}}
		l.mu.Lock()
		l.running[ex.key] = ex
		l.seq = uint64(id) - 1 // completion order: 1, 2, ..., 5
		l.mu.Unlock()
		l.finish(ex, chunked(id, n))
	}
	l.beginSession(nil)
	var batches [][]int64
	for {
		reps, more := l.takeUnsent(sendBatch)
		var batch []int64
		for _, r := range reps {
			batch = append(batch, r.result.GetLease().GetTaskId())
		}
		batches = append(batches, batch)
		if !more {
			break
		}
	}
	// 301 messages go alone; 101 + 101 fit in 256, a third 101 does not.
	if got := fmt.Sprint(batches); got != "[[1] [2 3] [4 5]]" {
		t.Fatalf("batches = %s; want [[1] [2 3] [4 5]]", got)
	}
}
