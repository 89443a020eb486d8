//go:build unix

package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/convergehq/converge/sdk-go/converge"
)

// Behaviour modes of a kind's handlers, set by the model.
const (
	behOK         = "ok"
	behFailFirst  = "failFirst"  // transient failures for attempts 1..k, then ok
	behFailAlways = "failAlways" // transient failures forever
	behTerminal   = "terminal"   // terminal failure of every reconcile
	behSlow       = "slow"       // ok, after sleeping
)

// behaviour is how a kind's handlers answer; the model changes it live.
type behaviour struct {
	mode string
	k    int           // for failFirst
	slow time.Duration // for slow
	// reason and retryAfter, for the transient failures of failFirst and
	// failAlways: the reason code and retry-after they report ("", 0:
	// none, the server's backoff).
	reason     string
	retryAfter time.Duration
}

func (b behaviour) String() string {
	s := b.mode
	switch b.mode {
	case behFailFirst:
		s = fmt.Sprintf("failFirst(%d)", b.k)
	case behSlow:
		s = fmt.Sprintf("slow(%s)", b.slow)
	}
	if b.reason != "" {
		s += " reason=" + b.reason
	}
	if b.retryAfter > 0 {
		s += " retryAfter=" + b.retryAfter.String()
	}
	return s
}

// failsTransiently reports whether a reconcile at attempt may fail
// transiently under b.
func (b behaviour) failsTransiently(attempt int) bool {
	return b.mode == behFailAlways || b.mode == behFailFirst && attempt <= b.k
}

// kindDef is what a worker needs to serve a kind: the model's view of its
// manifest.
type kindDef struct {
	name      string
	composite bool
	versions  []int
	finalizer bool
	verb      string // "" when the kind declares none
	// settles: a composite kind with a childrenSettled reaction, which
	// holds the composite Reconciling until it has run.
	settles bool
}

// fleet runs one in-process SDK worker per kind, whose handlers do what the
// model's behaviour for the kind says, and record every run.
type fleet struct {
	url string
	rec *recorder
	log *slog.Logger

	mu sync.Mutex
	// secretErrs are handlers that did not get their secret in clear.
	secretErrs []string
	beh        map[string]behaviour
	workers    map[string]*kworker
	// teardownStatus and teardownRejected are the status and the rejected
	// status each teardown was handed, by kind/name.
	teardownStatus, teardownRejected map[string][]byte
}

// kworker is one running converge.Worker.
type kworker struct {
	def      kindDef
	capacity int
	cancel   context.CancelFunc
	abort    chan struct{} // closed to make running handlers give up at once
	done     chan struct{}
}

func newFleet(url string, rec *recorder) *fleet {
	return &fleet{url: url, rec: rec, log: slog.New(slog.DiscardHandler),
		beh: map[string]behaviour{}, workers: map[string]*kworker{}, teardownStatus: map[string][]byte{}, teardownRejected: map[string][]byte{}}
}

func (f *fleet) setBehaviour(kind string, b behaviour) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beh[kind] = b
}

func (f *fleet) behaviourOf(kind string) behaviour {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.beh[kind]; ok {
		return b
	}
	return behaviour{mode: behOK}
}

// serving reports whether a worker serves kind now.
func (f *fleet) serving(kind string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.workers[kind] != nil
}

// start runs a worker for def with capacity; one must not be running.
func (f *fleet) start(def kindDef, capacity int) {
	w, err := converge.NewWorker(f.url, converge.WithCapacity(capacity), converge.WithName("model-"+def.name),
		converge.WithLogger(f.log), converge.WithReconnectBackoff(20*time.Millisecond, 300*time.Millisecond),
		converge.WithDrainTimeout(10*time.Second))
	if err != nil {
		panic("model fleet: " + err.Error()) // fixed options: a bug in the test
	}
	kw := &kworker{def: def, capacity: capacity, abort: make(chan struct{}), done: make(chan struct{})}
	for _, v := range def.versions {
		if def.composite {
			w.Handle(def.name, v, "compose", f.wrap(kw, f.compose))
			if def.settles {
				w.Handle(def.name, v, "settled", f.wrap(kw, f.settled))
			}
		} else {
			w.Handle(def.name, v, "reconcile", f.wrap(kw, f.reconcile))
			// Observing runs the same handler, so the model's predictions
			// of status and phase hold under either policy.
			w.Handle(def.name, v, "observe", f.wrap(kw, f.reconcile))
		}
		if def.finalizer {
			w.Handle(def.name, v, "teardown", f.wrap(kw, f.teardown))
		}
		if def.verb != "" {
			w.Handle(def.name, v, def.verb, f.wrap(kw, f.operation))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	kw.cancel = cancel
	go func() {
		defer close(kw.done)
		_ = w.Run(ctx)
	}()
	f.mu.Lock()
	f.workers[def.name] = kw
	f.mu.Unlock()
}

// stop ends kind's worker. graceful drains it (running handlers finish and
// report); otherwise running handlers give up at once, as in a crash, and
// the model opens a fault window.
func (f *fleet) stop(t tb, kind string, graceful bool) {
	t.Helper()
	f.mu.Lock()
	kw := f.workers[kind]
	delete(f.workers, kind)
	f.mu.Unlock()
	if kw == nil {
		return
	}
	if !graceful {
		f.rec.fault()
		close(kw.abort)
	}
	kw.cancel()
	select {
	case <-kw.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker of kind %s did not stop within 30s", kind)
	}
}

// stopAll ends every worker, for the end of a case.
func (f *fleet) stopAll(t tb) {
	f.mu.Lock()
	var kinds []string
	for k := range f.workers {
		kinds = append(kinds, k)
	}
	f.mu.Unlock()
	for _, k := range kinds {
		f.stop(t, k, false)
	}
}

// capacityOf returns the capacity of kind's worker, 0 when none runs.
func (f *fleet) capacityOf(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if kw := f.workers[kind]; kw != nil {
		return kw.capacity
	}
	return 0
}

type handlerFunc func(ctx context.Context, t *converge.Task, b behaviour) (*converge.Result, error)

// wrap instruments a handler: it records the run, applies the behaviour's
// delay, and makes the handler give up when its worker is aborted.
func (f *fleet) wrap(kw *kworker, h handlerFunc) converge.HandlerFunc {
	return func(ctx context.Context, t *converge.Task) (*converge.Result, error) {
		if t.Preview() {
			// A plan's preview is not work the model counts: the recorder
			// is this worker's side effect, so a preview skips it.
			return f.run(ctx, t, f.behaviourOf(t.Kind), h)
		}
		inv := f.rec.begin(t)
		b := f.behaviourOf(t.Kind)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-kw.abort:
				cancel()
			case <-ctx.Done():
			}
		}()
		res, err := f.run(ctx, t, b, h)
		outcome := "ok"
		switch {
		case ctx.Err() != nil && err != nil:
			outcome = "cancelled"
		case converge.IsTerminal(err):
			outcome = "terminal"
		case err != nil:
			outcome = "transient"
		}
		f.rec.finish(inv, outcome, err)
		return res, err
	}
}

func (f *fleet) run(ctx context.Context, t *converge.Task, b behaviour, h handlerFunc) (*converge.Result, error) {
	if b.mode == behSlow {
		select {
		case <-time.After(b.slow):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if b.failsTransiently(t.Attempt) {
		err := fmt.Errorf("model: transient failure (%s, attempt %d)", b, t.Attempt)
		if b.reason != "" {
			err = converge.Reason(b.reason, err)
		}
		if b.retryAfter > 0 {
			err = converge.RetryAfter(b.retryAfter, err)
		}
		return nil, err
	}
	return h(ctx, t, b)
}

var errPoison = errors.New("model: the spec is poisoned")

// serves reports whether a running worker serves version v of kind.
func (f *fleet) serves(kind string, v int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	kw := f.workers[kind]
	if kw == nil {
		return false
	}
	for _, have := range kw.def.versions {
		if have == v {
			return true
		}
	}
	return false
}
