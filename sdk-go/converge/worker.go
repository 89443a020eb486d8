package converge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"buf.build/go/protovalidate"
	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
	"github.com/convergehq/converge/sdk-go/gen/converge/v1/convergev1connect"
	"github.com/convergehq/converge/sdk-go/internal/endpoint"
)

// waits bounds the waits at the end of a drain and of a subscription.
type waits struct {
	// drainGrace: for handlers to return once the drain timeout cancelled
	// their contexts.
	drainGrace time.Duration
	// drainAcks: for the server to acknowledge the last results.
	drainAcks time.Duration
	// closeStream: for the server to end the stream after the worker closed
	// its side.
	closeStream time.Duration
	// subscribed: for the server's reply to Subscribe.
	subscribed time.Duration
}

var defaultWaits = waits{
	drainGrace:  5 * time.Second,
	drainAcks:   5 * time.Second,
	closeStream: 2 * time.Second,
	subscribed:  30 * time.Second,
}

// Worker serves reactions to a Converge server. Create one with [NewWorker],
// register a handler per reaction with [Worker.Handle], then call
// [Worker.Run]. A Worker runs once.
type Worker struct {
	url       string
	cfg       config
	waits     waits
	log       *slog.Logger
	ledger    *ledger
	configs   *configStore
	readiness *readiness
	panics    panicLog

	// idle hands a task to a handler goroutine waiting for one (see launch);
	// quit, closed when Run returns, lets waiting handler goroutines go.
	idle chan *execution
	quit chan struct{}

	mu       sync.Mutex
	handlers map[reactionKey]*registration
	started  bool

	// Set by Run before any stream starts; read-only afterwards.
	client    convergev1connect.WorkerServiceClient
	reactions []*convergev1.ReactionRef
	sdk       string
}

type reactionKey struct {
	kind     string
	version  int
	reaction string
}

// NewWorker returns a worker that dials the server at serverURL (http:// for
// cleartext HTTP/2, https:// for TLS), configured by opts. An empty
// serverURL means the URL in the environment variable [EnvServer]
// (CONVERGE_SERVER, as conctl and stdworker read it), or
// [DefaultServerURL] when that is unset too.
//
// It returns an error, naming the option or where the URL came from, for
// an invalid option or URL. [Worker.Run] reports what can only be checked
// once the handlers are registered.
func NewWorker(serverURL string, opts ...Option) (*Worker, error) {
	return newWorker(serverURL, os.Getenv, opts)
}

func newWorker(serverURL string, getenv func(string) string, opts []Option) (*Worker, error) {
	url, err := serverURLFrom(serverURL, getenv)
	if err != nil {
		return nil, err
	}
	cfg := config{
		capacity:     DefaultCapacity,
		name:         defaultName(),
		logger:       slog.Default(),
		drainTimeout: DefaultDrainTimeout,
		backoffMin:   DefaultReconnectMin,
		backoffMax:   DefaultReconnectMax,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.httpClient == nil {
		tlsFromEnv(&cfg, getenv)
	}
	if cfg.token == "" {
		cfg.token = strings.TrimSpace(getenv(EnvToken))
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	if err := cfg.checkSubscription(); err != nil {
		return nil, err
	}
	return &Worker{
		url:       url,
		cfg:       cfg,
		waits:     defaultWaits,
		log:       cfg.logger.With("worker", cfg.name),
		ledger:    newLedger(cfg.capacity),
		configs:   newConfigStore(),
		readiness: newReadiness(),
		handlers:  make(map[reactionKey]*registration),
		idle:      make(chan *execution),
		quit:      make(chan struct{}),
	}, nil
}

// Handle registers h to run the reaction named reaction of version version
// of kind, configured by opts (see [NeedsConfig] and [WithMiddleware]). The
// worker subscribes to exactly the registered reactions.
//
// Handle panics if h is nil, if the reaction is already registered, or if
// Run has been called: these are programming errors, as with
// [net/http.ServeMux.Handle]. Names and versions are checked by Run.
func (w *Worker) Handle(kind string, version int, reaction string, h HandlerFunc, opts ...HandlerOption) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := reactionKey{kind, version, reaction}
	switch {
	case h == nil:
		panic(fmt.Sprintf("converge: Handle(%q, %d, %q): handler is nil", kind, version, reaction))
	case w.started:
		panic(fmt.Sprintf("converge: Handle(%q, %d, %q): called after Run", kind, version, reaction))
	case w.handlers[key] != nil:
		panic(fmt.Sprintf("converge: Handle(%q, %d, %q): reaction already registered", kind, version, reaction))
	}
	reg := &registration{handler: h}
	for _, o := range opts {
		if o != nil {
			o.applyHandler(reg)
		}
	}
	reg.handler = w.wrap(h, reg.middleware)
	w.handlers[key] = reg
	w.configs.serve(kindVersion{kind, version})
	w.readiness.add(key, reg.needsConfig)
}

// Run connects to the server and serves tasks until ctx is done, then drains
// and returns nil.
//
// Connection failures never end Run: the worker logs them and reconnects
// with backoff (see [WithReconnectBackoff]); running handlers keep running
// and their results are delivered on the next stream. Run returns an error
// only for a configuration it cannot run: no handler registered, a
// reaction Handle was given an invalid name or version for, or a second
// call (NewWorker has checked the URL and the options); and when the
// server refuses the subscription itself (a registered reaction that the
// applied kind version does not declare, say a typo), which retrying
// cannot fix. The error then says what the server said; handlers still
// running are cancelled and their results dropped. A kind version not
// applied yet is only logged as the server's warning: its tasks flow once
// it is.
//
// Draining, once ctx is done: the worker tells the server to stop sending
// tasks, gives back the tasks it received but had not started, waits for
// running handlers (see [WithDrainTimeout]), reports their results, waits
// up to a few seconds for the server to acknowledge them, and closes the
// stream. When the drain timeout ends first, the tasks still running are
// given back to the server, which hands them to another worker at once
// (not after their lease), without counting a failed attempt; their
// handlers' contexts are cancelled, they get a short grace to return, and
// their results are dropped. A handler that ignores its context even then
// is left running. Handler contexts carry the values of ctx but not its
// cancellation.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.prepare(); err != nil {
		return err
	}
	defer close(w.quit)
	if ctx.Err() != nil {
		return nil
	}
	w.ledger.open(context.WithoutCancel(ctx))
	if w.cfg.onConfig != nil {
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			w.notifyConfigs(stop)
		}()
		defer w.stopNotifier(stop, stopped)
	}
	streams, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStreams()
	closeSend := make(chan struct{})
	done := make(chan struct{})
	refused := make(chan error, 1)
	go func() {
		defer close(done)
		if err := w.connectLoop(streams, closeSend); err != nil {
			refused <- err
		}
	}()

	select {
	case <-ctx.Done():
	case err := <-refused:
		w.ledger.startDrain()
		w.ledger.abandonRunning()
		return err
	}
	w.drain()
	close(closeSend)
	t := time.NewTimer(w.waits.closeStream)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	stopStreams()
	<-done
	return nil
}

// prepare checks the configuration and fixes what every stream subscribes
// with.
func (w *Worker) prepare() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("converge: Run called more than once")
	}
	w.started = true
	if len(w.handlers) == 0 {
		return errors.New("converge: no handler registered: call Handle before Run")
	}
	for k := range w.handlers {
		w.reactions = append(w.reactions, &convergev1.ReactionRef{Kind: k.kind, KindVersion: clampInt32(k.version), Reaction: k.reaction})
	}
	slices.SortFunc(w.reactions, func(a, b *convergev1.ReactionRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.KindVersion, b.KindVersion), cmp.Compare(a.Reaction, b.Reaction))
	})
	for _, r := range w.reactions {
		if err := protovalidate.Validate(r); err != nil {
			return fmt.Errorf("converge: Handle(%q, %d, %q): %w", r.Kind, r.KindVersion, r.Reaction, err)
		}
	}
	w.sdk = sdkVersion()
	if err := protovalidate.Validate(w.subscribe(nil)); err != nil {
		return fmt.Errorf("converge: invalid subscription: %w", err)
	}
	httpClient := w.cfg.httpClient
	if httpClient == nil {
		httpClient = newHTTPClient()
	}
	var copts []connect.ClientOption
	if w.cfg.token != "" {
		copts = append(copts, connect.WithInterceptors(endpoint.HeaderInterceptor(endpoint.BearerHeader(w.cfg.token))))
	}
	w.client = convergev1connect.NewWorkerServiceClient(httpClient, w.url, copts...)
	return nil
}

// subscribe is the first message of every stream.
func (w *Worker) subscribe(resumed []*convergev1.Lease) *convergev1.Subscribe {
	return &convergev1.Subscribe{
		WorkerName: w.cfg.name,
		Reactions:  w.reactions,
		Capacity:   int32(w.cfg.capacity),
		Resumed:    resumed,
		Sdk:        w.sdk,
	}
}

// handler returns the handler for a task; for an unregistered reaction, one
// that fails terminally saying so.
func (w *Worker) handler(t *convergev1.Task) HandlerFunc {
	key := reactionKey{t.GetKind(), int(t.GetKindVersion()), t.GetReaction()}
	w.mu.Lock()
	reg := w.handlers[key]
	w.mu.Unlock()
	switch {
	case reg == nil:
		return w.wrap(func(context.Context, *Task) (*Result, error) {
			return nil, Terminal(fmt.Errorf("converge: worker %q has no handler for kind %q version %d reaction %q",
				w.cfg.name, key.kind, key.version, key.reaction))
		}, nil)
	case reg.needsConfig && !hasConfig(t.GetConfig()):
		// The task raced the readiness report, or the server does not
		// honour it: the handler was promised a config, so the server is
		// asked to retry later instead.
		return w.wrap(func(context.Context, *Task) (*Result, error) {
			return nil, fmt.Errorf("converge: kind %q version %d reaction %q needs a provider config (NeedsConfig) and the task carries none: %s",
				key.kind, key.version, key.reaction, NoConfigReason)
		}, reg.middleware)
	}
	return reg.handler
}

// connectLoop holds a stream to the server, reconnecting with backoff, until
// ctx is done or closeSend is closed, or the server refuses the
// subscription, which it returns.
func (w *Worker) connectLoop(ctx context.Context, closeSend <-chan struct{}) error {
	b := newBackoff(w.cfg.backoffMin, w.cfg.backoffMax)
	for {
		subscribed, err := w.runSession(ctx, closeSend)
		if ctx.Err() != nil || isClosed(closeSend) {
			return nil
		}
		if !subscribed && refusesSubscription(err) {
			w.log.Error("converge: the server refused the subscription", "error", err)
			return fmt.Errorf("converge: the server refused the subscription: %w", err)
		}
		if subscribed {
			b.reset()
		}
		delay := b.next()
		if subscribed {
			w.log.Warn("converge: worker stream ended; reconnecting", "error", err, "delay", delay)
		} else {
			w.log.Warn("converge: worker could not connect; retrying", "error", err, "delay", delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-closeSend:
			t.Stop()
			return nil
		}
	}
}

// refusesSubscription reports whether the server answered Subscribe with a
// refusal of the subscription itself: it declares a reaction the kind
// does not (FailedPrecondition), or the message breaks the protocol's
// rules (InvalidArgument). Another attempt would be refused alike.
func refusesSubscription(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeFailedPrecondition, connect.CodeInvalidArgument:
		return true
	}
	return false
}

// drain stops taking tasks, gives back those not started, and waits,
// bounded, for running handlers and the acknowledgement of their results;
// what is still running at the drain timeout is given back too.
func (w *Worker) drain() {
	w.ledger.startDrain()
	w.log.Info("converge: worker draining", "running", w.ledger.busy())
	idle := func(l *ledger) bool { return l.busyLocked() == 0 }
	if !w.ledger.await(timer(w.cfg.drainTimeout), idle) {
		n := w.ledger.releaseRunning()
		w.log.Warn("converge: drain timeout: giving the running tasks back to the server and cancelling their handlers",
			"timeout", w.cfg.drainTimeout, "released", n)
		returned := func(l *ledger) bool { return len(l.running) == 0 }
		if !w.ledger.await(timer(w.waits.drainGrace), returned) {
			w.log.Error("converge: handlers ignored cancellation; leaving them running", "running", w.ledger.handlers())
		}
	}
	settled := func(l *ledger) bool { return len(l.results) == 0 && len(l.releases) == 0 }
	if !w.ledger.await(timer(w.waits.drainAcks), settled) {
		w.log.Warn("converge: results not acknowledged by the end of the drain; the server will re-dispatch their tasks",
			"unacked", w.ledger.unacked())
	}
}

// timer returns a channel that fires once after d; the timer is collected
// when unreferenced, so callers need not stop it.
func timer(d time.Duration) <-chan time.Time {
	return time.NewTimer(d).C
}

// clampInt32 keeps out-of-range values out of range, so validation reports
// them instead of a wrapped-around value.
func clampInt32(v int) int32 {
	return int32(min(max(v, math.MinInt32), math.MaxInt32))
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
