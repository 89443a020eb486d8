// Package taskrec keeps task records: for each task a broker runs, what
// the worker was sent (spec, the effective config with secret-looking
// values redacted, the values dependencies flowed in), what it returned,
// who ran it and when, and whether the fence applied or discarded the
// result. The broker's hot path only fills a Pending with what it already
// holds and hands it over without blocking; a writer goroutine copies
// those parts into the stored form (see format.go) and writes them in
// batches, pruning a resource to its last Keep records once it has Keep/2
// new ones (see Run). Readers get the JSON documents from Document. When
// the buffer is full a record is dropped and counted, never waited for.
package taskrec

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/server/internal/store"
	"github.com/convergehq/converge/server/internal/trigger"
)

// Defaults of the converge serve flags.
const (
	DefaultKeep     = 20
	DefaultMaxBytes = 64 << 10
	// MinMaxBytes is the smallest byte budget: room for the summary, the
	// flowed values' pointers and the error.
	MinMaxBytes = 1 << 10
)

// Config bounds the records. Keep 0 turns them off.
type Config struct {
	// Keep is how many records are kept per resource.
	Keep int
	// MaxBytes is the budget of one record's input and result documents
	// together; larger parts are cut (see fit).
	MaxBytes int
	// Buffer is how many finished records may wait for the writer
	// (default 8192); more are dropped.
	Buffer int
	// Batch caps the records written in one statement (default 2000).
	Batch int
}

// Recorder collects and writes records. A nil Recorder records nothing;
// every method is safe on nil.
type Recorder struct {
	cfg     Config
	store   *store.Store
	log     *slog.Logger
	queue   chan *Pending
	written atomic.Int64
	dropped atomic.Int64
}

// New returns a recorder, or nil when cfg.Keep is 0.
func New(cfg Config, st *store.Store, log *slog.Logger) *Recorder {
	if cfg.Keep <= 0 {
		return nil
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 8192
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 2000
	}
	return &Recorder{cfg: cfg, store: st, log: log, queue: make(chan *Pending, cfg.Buffer)}
}

// Pending is a record being filled by the broker while its task runs.
// The broker's lock guards it; after Finish it belongs to the writer.
type Pending struct {
	claimed      claim
	input        Input
	claimedAt    time.Time
	dispatchedAt time.Time
	endedAt      time.Time
	worker       string
	session      string
	// returned is the worker's result as received; children are the
	// children of a composer's answer, all parts together.
	returned *convergev1.TaskResult
	children []store.ChildSpec
	// out is what the broker applied (or tried to): it differs from the
	// worker's result when the server refused that (a contract breach, a
	// refused composition, a deadline).
	out     store.Outcome
	outcome string
	why     string
}

// claim is what a record keeps of its task's claim besides the input:
// a Pending lives until its batch is written, so it holds no more.
type claim struct {
	resourceID, taskID, generation int64
	trigger                        string
	attempt                        int32
	// owned: only an owned resource can have edges, so only its record
	// looks up the values that flowed in.
	owned bool
}

func claimOf(c store.Claimed) claim {
	return claim{resourceID: c.ResourceID, taskID: c.TaskID, generation: c.Generation, trigger: c.Trigger, attempt: c.Attempt, owned: c.Owned}
}

// Start begins the record of a claimed task, given what it is sent in
// its stored forms (see Input). It returns nil when records are off, or
// for a task of no resource.
func (r *Recorder) Start(c store.Claimed, in Input, now time.Time) *Pending {
	if r == nil || c.ResourceID == 0 {
		return nil
	}
	return &Pending{claimed: claimOf(c), input: in, claimedAt: now}
}

// Dispatched notes the task went to a worker.
func (p *Pending) Dispatched(now time.Time, worker, session string) {
	if p != nil {
		p.dispatchedAt, p.worker, p.session = now, worker, session
	}
}

// Returned notes the worker's result, and a composer's children.
func (p *Pending) Returned(res *convergev1.TaskResult, comp *store.Composition) {
	if p == nil {
		return
	}
	p.returned = res
	if comp != nil {
		p.children = comp.Children
	}
}

// Finish ends the record: outcome is store.RecordApplied,
// store.RecordDiscarded or store.RecordLost, why says why it was not
// applied, and out is the outcome the broker applied or tried to. It
// never blocks: with the buffer full the record is dropped.
func (r *Recorder) Finish(p *Pending, out store.Outcome, outcome, why string) {
	if r == nil || p == nil {
		return
	}
	p.endedAt, p.out, p.outcome, p.why = time.Now(), out, outcome, why
	select {
	case r.queue <- p:
	default:
		r.dropped.Add(1)
	}
}

// Written and Dropped count records written and dropped, for metrics.
func (r *Recorder) Written() int64 { return r.written.Load() }

// Dropped counts records dropped because the buffer was full or their
// batch could not be written.
func (r *Recorder) Dropped() int64 { return r.dropped.Load() }

// Name implements service.Service.
func (*Recorder) Name() string { return "task recorder" }

// maxUnpruned bounds the resources the writer remembers as written to
// since their last prune, and pruneAll how long it remembers them; past
// either, all are pruned at once. pruneChunk bounds the resources of one
// prune statement. linger is how long the writer lets records gather
// after the first of a batch: a sender then only queues, without waking
// the writer, and a batch is one statement however fast records come.
const (
	maxUnpruned = 100_000
	pruneAll    = 10 * time.Minute
	pruneChunk  = 2000
	linger      = 50 * time.Millisecond
)

// Run writes records until ctx ends, then writes what is buffered.
//
// A resource is pruned once Keep/2 records were written to it since its
// last prune, so it holds at most about 1.5 x Keep records (reads show
// the newest Keep), and pruning costs a write a tenth of a prune at the
// default Keep; one reconciled once is not pruned for nothing. A resource
// with fewer new records waits for more, for maxUnpruned or pruneAll, or
// for the shutdown. A teardown's record is pruned at once: its resource
// is likely gone by then, and the prune removes the records of a resource
// that no longer exists.
func (r *Recorder) Run(ctx context.Context) {
	w := &writer{Recorder: r, unpruned: make(map[int64]int, 4096)}
	tick := time.NewTicker(pruneAll)
	defer tick.Stop()
	wait := time.NewTimer(linger)
	wait.Stop()
	for {
		var batch []*Pending
		select {
		case <-ctx.Done():
			w.drain()
			return
		case <-tick.C:
			w.prune(ctx, keys(w.unpruned))
			continue
		case p := <-r.queue:
			batch = append(batch, p)
		}
		if len(r.queue) < r.cfg.Batch-1 {
			wait.Reset(linger)
			select {
			case <-ctx.Done():
			case <-wait.C:
			}
		}
		batch = r.fill(batch)
		due := w.write(ctx, batch)
		if len(w.unpruned) > maxUnpruned {
			due = keys(w.unpruned)
		}
		w.prune(ctx, due)
	}
}

// writer is the state of Run: the resources written to since their last
// prune, with how many records each, and the encoder it reuses.
type writer struct {
	*Recorder
	unpruned map[int64]int
	enc      encoder
	recs     []store.TaskRecord
}

// pruneAfter is how many new records make a resource due a prune.
func (r *Recorder) pruneAfter() int { return max(1, r.cfg.Keep/2) }

func keys(m map[int64]int) []int64 {
	out := make([]int64, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	return out
}

func (r *Recorder) fill(batch []*Pending) []*Pending {
	for len(batch) < r.cfg.Batch {
		select {
		case p := <-r.queue:
			batch = append(batch, p)
		default:
			return batch
		}
	}
	return batch
}

// drain writes what is buffered at shutdown, for a few seconds at most,
// and prunes every resource written to.
func (w *writer) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		batch := w.fill(nil)
		if len(batch) == 0 {
			break
		}
		w.write(ctx, batch)
	}
	w.prune(ctx, keys(w.unpruned))
}

// prune trims the resources ids and forgets them in unpruned.
func (w *writer) prune(ctx context.Context, ids []int64) {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), pruneChunk)]
		ids = ids[len(chunk):]
		for _, id := range chunk {
			delete(w.unpruned, id)
		}
		if err := w.store.PruneTaskRecords(ctx, chunk, w.cfg.Keep); err != nil && ctx.Err() == nil {
			w.log.Warn("pruning task records failed; they are trimmed at a later prune", "resources", len(chunk), "err", err)
		}
	}
}

// write builds and writes a batch, counting in unpruned the records of
// each resource; it returns those due a prune (Keep/2 new records).
func (w *writer) write(ctx context.Context, batch []*Pending) (due []int64) {
	var withSpec []int64
	for _, p := range batch {
		if p.input.Spec != nil && p.claimed.owned {
			withSpec = append(withSpec, p.claimed.resourceID)
		}
	}
	var flows map[int64][][]byte
	if len(withSpec) > 0 {
		var err error
		if flows, err = w.store.EdgeFlows(ctx, withSpec); err != nil && ctx.Err() == nil {
			w.log.Warn("reading flows for task records failed; the records name no flowed values", "err", err)
		}
	}
	w.enc.reset()
	recs := w.recs[:0]
	for _, p := range batch {
		recs = append(recs, w.enc.build(p, flows[p.claimed.resourceID], w.cfg.MaxBytes))
		id := p.claimed.resourceID
		if w.unpruned[id]++; w.unpruned[id] == w.pruneAfter() || p.claimed.trigger == trigger.DeleteRequested {
			due = append(due, id)
		}
	}
	// The rows alias the encoder's buffers and the batch's Pendings: keep
	// the slice for the next batch, not what it points to.
	defer func() { clear(recs); w.recs = recs[:0] }()
	if err := w.store.WriteTaskRecords(ctx, recs); err != nil {
		w.dropped.Add(int64(len(recs)))
		if ctx.Err() == nil {
			w.log.Warn("writing task records failed; they are dropped", "records", len(recs), "err", err)
		}
		return due
	}
	w.written.Add(int64(len(recs)))
	return due
}
