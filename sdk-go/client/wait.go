package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"connectrpc.com/connect"

	convergev1 "github.com/convergehq/converge/sdk-go/gen/converge/v1"
)

// DefaultNamespace is the namespace the server uses when a request names none.
const DefaultNamespace = "default"

// firstPollDelay is the first gap between reads that no change prompted;
// later gaps double up to the poll interval.
const firstPollDelay = 100 * time.Millisecond

// A WaitOption configures WaitFor and WaitForOperation.
type WaitOption interface {
	applyWait(*waitConfig)
}

type waitOptionFunc func(*waitConfig)

func (f waitOptionFunc) applyWait(c *waitConfig) { f(c) }

type waitConfig struct {
	pollInterval time.Duration
}

// WithPollInterval bounds how long a wait goes without reading the state
// again when nothing told it of a change. Reads that no change prompted
// start 100ms apart and back off to d.
//
// WaitFor reads a resource whenever the Watch stream reports a change of its
// phase, and by default only then. Some things a caller may wait for do not
// change the phase (a forced reconcile of a Ready resource bumps only its
// reconcile count), so waiting for them needs a poll interval. For
// WaitForOperation, which can only poll, the default is 2s. A d of zero or
// less keeps the default.
func WithPollInterval(d time.Duration) WaitOption {
	return waitOptionFunc(func(c *waitConfig) {
		if d > 0 {
			c.pollInterval = d
		}
	})
}

func newWaitConfig(defaultInterval time.Duration, opts []WaitOption) waitConfig {
	cfg := waitConfig{pollInterval: defaultInterval}
	for _, opt := range opts {
		if opt != nil {
			opt.applyWait(&cfg)
		}
	}
	return cfg
}

// WaitFor blocks until the resource namespace/kind/name satisfies done, and
// returns it. An empty namespace means DefaultNamespace.
//
// It registers a Watch for the resource before it reads it, so no change
// between the read and the watch can be missed, then reads the resource again
// after each change until done returns true (and, with WithPollInterval,
// also when the interval passes without one). A broken Watch stream is
// resumed from its last cursor.
//
// When the resource does not exist (or is deleted while waiting), WaitFor
// returns a connect error with code NotFound and the message
// "resource namespace/kind/name not found". When ctx ends first, it returns the
// last version it read (nil if none) and an error that wraps ctx.Err().
func (c *Client) WaitFor(ctx context.Context, namespace, kind, name string, done func(*convergev1.Resource) bool, opts ...WaitOption) (*convergev1.Resource, error) {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if kind == "" || name == "" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("WaitFor: kind and name are required"))
	}
	cfg := newWaitConfig(0, opts)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// The watch runs on its own and only says when to read: the first time
	// once it is registered, then after each change of the resource.
	wake := make(chan struct{}, 1)
	watchErr := make(chan error, 1)
	watch := &convergev1.WatchRequest{Namespace: namespace, Kind: kind, Name: name}
	go func() {
		watchErr <- c.Follow(ctx, watch, func(resp *convergev1.WatchResponse) error {
			if resp.GetHeartbeat() || mentions(resp.GetChanges(), namespace, kind, name) {
				select {
				case wake <- struct{}{}:
				default: // a read is already due
				}
			}
			return nil
		})
	}()

	var last *convergev1.Resource
	poll := newPoller(cfg.pollInterval)
	defer poll.stop()
	registered := false
	for {
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("wait for resource %s/%s/%s: %w", namespace, kind, name, ctx.Err())
		case err := <-watchErr:
			if ctx.Err() != nil {
				return last, fmt.Errorf("wait for resource %s/%s/%s: %w", namespace, kind, name, ctx.Err())
			}
			return last, err
		case <-wake:
			registered = true
			poll.reset()
		case <-poll.c():
			poll.backOff()
		}
		if !registered {
			continue
		}
		got, err := c.GetResource(ctx, &convergev1.GetResourceRequest{Namespace: namespace, Kind: kind, Name: name})
		switch {
		case connect.CodeOf(err) == connect.CodeNotFound:
			return last, connect.NewError(connect.CodeNotFound, fmt.Errorf("resource %s/%s/%s not found", namespace, kind, name))
		case err != nil && ctx.Err() != nil:
			return last, fmt.Errorf("wait for resource %s/%s/%s: %w", namespace, kind, name, ctx.Err())
		case err != nil:
			return last, err
		}
		last = got.GetResource()
		if done(last) {
			return last, nil
		}
	}
}

func mentions(changes []*convergev1.Change, namespace, kind, name string) bool {
	for _, ch := range changes {
		if ch.GetNamespace() == namespace && ch.GetKind() == kind && ch.GetName() == name {
			return true
		}
	}
	return false
}

// poller times reads that no change prompted: first after firstPollDelay,
// then twice as long each time up to max. A zero max never fires.
type poller struct {
	max   time.Duration
	delay time.Duration
	timer *time.Timer
}

func newPoller(max time.Duration) *poller {
	return &poller{max: max}
}

// c fires when the next read is due; nil (never) without an interval.
func (p *poller) c() <-chan time.Time {
	if p.timer == nil {
		return nil
	}
	return p.timer.C
}

// reset starts over from the shortest delay: something just changed.
func (p *poller) reset() {
	p.delay = min(firstPollDelay, p.max)
	p.arm()
}

// backOff doubles the delay, up to max.
func (p *poller) backOff() {
	p.delay = min(2*p.delay, p.max)
	p.arm()
}

func (p *poller) arm() {
	if p.max <= 0 {
		return
	}
	if p.timer == nil {
		p.timer = time.NewTimer(p.delay)
		return
	}
	p.timer.Reset(p.delay)
}

func (p *poller) stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}
