//go:build unix

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/convergehq/converge/sdk-go/client"
	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// The load: one apply every chaosApplyEvery through the control replicas,
// a create with probability chaosCreateShare and otherwise a spec update
// of a resource created earlier.
const (
	chaosApplyEvery  = 25 * time.Millisecond
	chaosCreateShare = 0.25
	// chaosCallTimeout bounds one apply, so a call stuck on a dead replica
	// or database costs a few ticks, not the run.
	chaosCallTimeout = 2 * time.Second
	// chaosMaxInflight bounds the applies awaiting an answer.
	chaosMaxInflight = 16
)

// ackedWrite is the last acknowledged write of one resource.
type ackedWrite struct {
	generation int64
	greeting   string
	// api indexes the client that was answered, which holds the write's
	// read-your-writes token.
	api int
}

// loadGen applies creates and spec updates at a fixed rate and records
// every write the server acknowledged.
type loadGen struct {
	apis []*client.Client
	rng  *rand.Rand // guarded by mu

	mu        sync.Mutex
	acked     map[string]ackedWrite
	names     []string        // acknowledged creates, the update targets
	attempted map[string]bool // every name a create was sent for
	busy      map[string]bool // names with a write in flight
	ackTimes  []time.Time     // when each acknowledgement arrived
	nAcked    int
	nFailed   int
	nDropped  int // ticks dropped with chaosMaxInflight applies out
	// violations are acknowledgements that contradict earlier ones.
	violations []string
	seq        int
}

func newLoadGen(apis []*client.Client, seed uint64) *loadGen {
	return &loadGen{apis: apis, rng: rand.New(rand.NewPCG(seed, 1)),
		acked: map[string]ackedWrite{}, attempted: map[string]bool{}, busy: map[string]bool{}}
}

// run applies until ctx ends, and returns once no apply is in flight.
// Each tick's apply runs on its own, so a slow answer does not lower the
// offered rate; a tick finding chaosMaxInflight applies still out is
// dropped and counted.
func (g *loadGen) run(ctx context.Context) {
	tick := time.NewTicker(chaosApplyEvery)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, chaosMaxInflight)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			g.mu.Lock()
			g.nDropped++
			g.mu.Unlock()
			continue
		}
		w := g.next()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			g.send(ctx, w)
		}()
	}
}

// write is one apply the generator sends.
type write struct {
	seq      int
	name     string
	create   bool
	greeting string
}

// next picks the next write: a create, or an update of a created resource
// with no write in flight, so that a resource's writes are acknowledged
// in the order they were sent.
func (g *loadGen) next() write {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seq++
	w := write{seq: g.seq, greeting: fmt.Sprintf("hello-%d", g.seq)}
	w.create = len(g.names) == 0 || g.rng.Float64() < chaosCreateShare
	if !w.create {
		w.name = g.names[g.rng.IntN(len(g.names))]
		w.create = g.busy[w.name]
	}
	if w.create {
		w.name = fmt.Sprintf("c-%05d", w.seq)
		g.attempted[w.name] = true
	}
	g.busy[w.name] = true
	return w
}

// send applies w through each control replica in turn until one answers.
func (g *loadGen) send(ctx context.Context, w write) {
	defer func() {
		g.mu.Lock()
		delete(g.busy, w.name)
		g.mu.Unlock()
	}()
	req := &convergev1.ApplyResourceRequest{Kind: chaosKind, KindVersion: 1, Name: w.name,
		Spec: &structpb.Struct{Fields: map[string]*structpb.Value{
			"name": structpb.NewStringValue(w.name), "greeting": structpb.NewStringValue(w.greeting)}}}
	first := w.seq % len(g.apis)
	for i := range g.apis {
		n := (first + i) % len(g.apis)
		callCtx, cancel := context.WithTimeout(ctx, chaosCallTimeout)
		resp, err := g.apis[n].ApplyResource(callCtx, req)
		cancel()
		if err == nil {
			// After a failed attempt this one may find the write already
			// made: the first attempt committed but its answer was lost.
			g.ack(w.name, w.create, i > 0, resp, w.greeting, n)
			return
		}
		if ctx.Err() != nil {
			return
		}
	}
	g.mu.Lock()
	g.nFailed++
	g.mu.Unlock()
}

// ack records an acknowledged write and checks it against the previous
// one of the same resource. retried says an earlier attempt of the same
// write failed, so "unchanged" is a fine answer.
func (g *loadGen) ack(name string, create, retried bool, resp *convergev1.ApplyResourceResponse, greeting string, api int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gen := resp.GetResource().GetGeneration()
	prev, seen := g.acked[name]
	result := resp.GetResult()
	switch {
	case retried && result == "unchanged":
	case create && result != "created":
		g.violations = append(g.violations, fmt.Sprintf("create of %s/%s acknowledged with result %q, want created", chaosKind, name, result))
	case !create && result != "configured":
		g.violations = append(g.violations, fmt.Sprintf("spec update of %s/%s to greeting %q acknowledged with result %q, want configured", chaosKind, name, greeting, result))
	}
	if seen && gen <= prev.generation {
		g.violations = append(g.violations, fmt.Sprintf("%s/%s: an update was acknowledged at generation %d after one at generation %d: the earlier write was lost",
			chaosKind, name, gen, prev.generation))
	}
	g.acked[name] = ackedWrite{generation: gen, greeting: greeting, api: api}
	g.ackTimes = append(g.ackTimes, time.Now())
	if create {
		g.names = append(g.names, name)
	}
	g.nAcked++
}

// acks returns when each acknowledgement arrived, sorted.
func (g *loadGen) acks() []time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := slices.Clone(g.ackTimes)
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// snapshot returns copies of what the generator recorded.
func (g *loadGen) snapshot() (acked map[string]ackedWrite, attempted map[string]bool, nAcked, nFailed, nDropped int, violations []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	acked = make(map[string]ackedWrite, len(g.acked))
	for k, v := range g.acked {
		acked[k] = v
	}
	attempted = make(map[string]bool, len(g.attempted))
	for k := range g.attempted {
		attempted[k] = true
	}
	return acked, attempted, g.nAcked, g.nFailed, g.nDropped, append([]string(nil), g.violations...)
}
