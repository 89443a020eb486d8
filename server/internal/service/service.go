// Package service gives the server's background duties one lifecycle. A
// duty is a Service: it has a name and runs until its context ends. A
// Group starts a list of them and stops them in the reverse order, one at
// a time, so a duty that others lean on (the wake-up bus, the kinds
// registry) outlives every duty started after it.
package service

import (
	"context"
	"log/slog"
	"time"
)

// Service is a background duty.
type Service interface {
	// Name says what the duty does, for logs ("lease reaper").
	Name() string
	// Run does the duty until ctx ends, then cleans up and returns.
	Run(ctx context.Context)
}

// slowStop is how long a stopping service may take before the group logs
// that it is still waiting for it.
const slowStop = 5 * time.Second

// Group is a set of running services.
type Group struct {
	log      *slog.Logger
	running  []*running
	slowStop time.Duration
}

type running struct {
	svc    Service
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs each service in a goroutine of its own, in order. Ending ctx
// stops them all at once; Stop stops them in order.
func Start(ctx context.Context, log *slog.Logger, services ...Service) *Group {
	g := &Group{log: log, slowStop: slowStop}
	for _, svc := range services {
		runCtx, cancel := context.WithCancel(ctx)
		r := &running{svc: svc, cancel: cancel, done: make(chan struct{})}
		g.running = append(g.running, r)
		go func() {
			defer close(r.done)
			svc.Run(runCtx)
			if runCtx.Err() == nil {
				// A duty that ends by itself is a bug: nothing does it now.
				log.Error("service stopped before it was asked to", "service", svc.Name())
			}
		}()
	}
	return g
}

// Stop stops the services in the reverse order of their start, waiting for
// each before stopping the next. It is safe to call more than once.
func (g *Group) Stop() {
	for i := len(g.running) - 1; i >= 0; i-- {
		r := g.running[i]
		name := r.svc.Name()
		g.log.Info("stopping service", "service", name)
		began := time.Now()
		r.cancel()
		g.wait(r, name)
		g.log.Debug("service stopped", "service", name, "took", time.Since(began).Round(time.Millisecond))
	}
}

// wait waits for r to return, saying every slowStop that it still has not.
func (g *Group) wait(r *running, name string) {
	tick := time.NewTicker(g.slowStop)
	defer tick.Stop()
	began := time.Now()
	for {
		select {
		case <-r.done:
			return
		case <-tick.C:
			g.log.Warn("service is still stopping", "service", name, "waited", time.Since(began).Round(time.Second))
		}
	}
}
