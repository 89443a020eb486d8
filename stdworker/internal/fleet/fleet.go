// Package fleet runs stdworker's SDK workers: one converge.Worker per served
// kind version, so each kind has its own stream, capacity (its parallelism)
// and drain, and a kind started at run time (provider.Env.Serve) joins and
// leaves without disturbing the others.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/convergehq/converge/sdk-go/client"
	"github.com/convergehq/converge/sdk-go/converge"
	"github.com/convergehq/converge/stdworker/provider"
)

// Options configure a Fleet.
type Options struct {
	// ServerURL is the server's worker endpoint, e.g. http://localhost:7070.
	ServerURL string
	// HTTPClient dials it; nil means the SDK's default client.
	HTTPClient connect.HTTPClient
	// Token is the bearer token the workers send ("" sends none).
	Token string
	// Control is given to providers in provider.Env.
	Control *client.Client
	// Log receives the fleet's and the workers' logs.
	Log *slog.Logger
	// StateDir holds a directory per kind version, given to its provider.
	StateDir string
	// Parallelism is the capacity of kinds started with 0, and of kinds
	// started at run time.
	Parallelism int
	// DrainTimeout is each worker's drain timeout; 0 means the SDK's.
	DrainTimeout time.Duration
	// Name prefixes each worker's name; "<prefix>/<kind>@<version>".
	Name string
}

// Fleet is a set of running workers. Start adds one; when the context given
// to New ends, every worker drains, and Wait returns once all have.
type Fleet struct {
	opts Options
	root context.Context

	mu      sync.Mutex
	running map[string]*member
	wg      sync.WaitGroup
	errs    []error
}

type member struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// New returns an empty fleet whose workers run until ctx ends.
func New(ctx context.Context, opts Options) *Fleet {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = converge.DefaultCapacity
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = "stdworker-" + host + "-" + strconv.Itoa(os.Getpid())
	}
	return &Fleet{opts: opts, root: ctx, running: map[string]*member{}}
}

// Start serves s with p on a worker of its own running parallelism tasks at
// once (0: the fleet's default). It returns once p has registered its
// handlers; the worker then runs until stop is called or the fleet's context
// ends, and drains either way. stop waits for the drain. ctx bounds only the
// registration.
func (f *Fleet) Start(ctx context.Context, p provider.Provider, s provider.Served, parallelism int) (stop func(), err error) {
	if s.Manifest == nil {
		return nil, errors.New("fleet: no manifest to serve")
	}
	kind, version := s.Manifest.GetKind(), int(s.Manifest.GetKindVersion())
	ref := kind + "@" + strconv.Itoa(version)
	if parallelism <= 0 {
		parallelism = f.opts.Parallelism
	}
	f.mu.Lock()
	_, dup := f.running[ref]
	f.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("%s is already served", ref)
	}
	if err := f.root.Err(); err != nil {
		return nil, fmt.Errorf("%s: stdworker is stopping", ref)
	}
	stateDir := filepath.Join(f.opts.StateDir, ref)
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("%s: state directory: %w", ref, err)
	}
	log := f.opts.Log.With("kind", ref, "provider", p.Name())
	opts := []converge.Option{
		converge.WithCapacity(parallelism),
		converge.WithLogger(log),
		converge.WithName(f.opts.Name + "/" + ref),
	}
	if f.opts.HTTPClient != nil {
		opts = append(opts, converge.WithHTTPClient(f.opts.HTTPClient))
	}
	if f.opts.Token != "" {
		opts = append(opts, converge.WithBearerToken(f.opts.Token))
	}
	if f.opts.DrainTimeout > 0 {
		opts = append(opts, converge.WithDrainTimeout(f.opts.DrainTimeout))
	}
	w, err := converge.NewWorker(f.opts.ServerURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	runCtx, cancel := context.WithCancel(f.root)
	env := provider.Env{Log: log, Control: f.opts.Control, StateDir: stateDir, Serve: f.serve, Done: runCtx.Done()}
	if err := p.Register(ctx, w, s, env); err != nil {
		cancel()
		return nil, fmt.Errorf("%s (provider %s): %w", ref, p.Name(), err)
	}

	m := &member{cancel: cancel, done: make(chan struct{})}
	f.mu.Lock()
	if _, dup := f.running[ref]; dup {
		f.mu.Unlock()
		cancel()
		return nil, fmt.Errorf("%s is already served", ref)
	}
	f.running[ref] = m
	f.wg.Add(1)
	f.mu.Unlock()
	log.Info("serving", "parallelism", parallelism)
	go func() {
		defer f.wg.Done()
		defer close(m.done)
		err := w.Run(runCtx)
		f.mu.Lock()
		delete(f.running, ref)
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("%s: %w", ref, err))
		}
		f.mu.Unlock()
		if err != nil {
			log.Error("worker stopped", "err", err)
			return
		}
		log.Info("drained")
	}()
	return func() { cancel(); <-m.done }, nil
}

// serve is provider.Env.Serve: a kind started at run time gets the default
// parallelism.
func (f *Fleet) serve(ctx context.Context, p provider.Provider, s provider.Served) (func(), error) {
	return f.Start(ctx, p, s, 0)
}

// Serving lists the kind versions being served, as "kind@version".
func (f *Fleet) Serving() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.running))
	for ref := range f.running {
		out = append(out, ref)
	}
	return out
}

// Wait blocks until every worker has returned, and reports the workers that
// ended with an error.
func (f *Fleet) Wait() error {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}
