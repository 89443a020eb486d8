// Package notify wakes components when something they wait for may have
// happened: work queued, changes recorded, kinds edited. Wakes inside one
// process are immediate; wakes for other replicas travel as PostgreSQL
// NOTIFY within a budget of notifications per second that the replicas
// share, because every notifying transaction serialises on a
// cluster-wide lock at commit. A wake is only a hint: every consumer also
// polls as a failsafe.
package notify

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channels.
const (
	Tasks   = "converge_tasks"
	Changes = "converge_changes"
	Kinds   = "converge_kinds"
	// Previews: a plan asked for a preview, or a worker answered one.
	Previews = "converge_previews"
)

var channels = []string{Tasks, Changes, Kinds, Previews}

// Bus fans wakes out to local subscribers and to other replicas.
type Bus struct {
	pool   *pgxpool.Pool
	self   string
	budget float64
	log    *slog.Logger

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	// dirty holds the channels published since their last NOTIFY, oldest
	// first, so a send the budget cuts short leaves the newest for the next.
	dirty    []string
	kick     chan struct{}
	peers    atomic.Int64
	sent     atomic.Int64
	received atomic.Int64
}

// New returns a bus. self tags this process's notifications so it can
// ignore its own; budget is how many notifications per second the whole
// cluster may send, shared equally among the live replicas.
func New(pool *pgxpool.Pool, self string, budget float64, log *slog.Logger) *Bus {
	return &Bus{
		pool: pool, self: self, budget: budget, log: log,
		subs: map[string]map[chan struct{}]struct{}{},
		kick: make(chan struct{}, 1),
	}
}

// Subscribe returns a channel that receives a value after each Publish on
// channel (coalesced: one pending wake at most) and a cancel function.
func (b *Bus) Subscribe(channel string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	b.mu.Lock()
	if b.subs[channel] == nil {
		b.subs[channel] = map[chan struct{}]struct{}{}
	}
	b.subs[channel][ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs[channel], ch)
		b.mu.Unlock()
	}
}

// SetPeers says how many other live replicas there are. With none, no
// NOTIFY is sent at all; with n, this replica sends at most budget/(n+1)
// notifications a second.
func (b *Bus) SetPeers(n int) { b.peers.Store(int64(n)) }

// Sent reports how many NOTIFY statements this bus has issued.
func (b *Bus) Sent() int64 { return b.sent.Load() }

// Received reports how many notifications from other replicas this bus
// has received.
func (b *Bus) Received() int64 { return b.received.Load() }

// Publish wakes local subscribers now and, if other replicas exist,
// schedules a NOTIFY.
func (b *Bus) Publish(channel string) {
	b.wakeLocal(channel)
	if b.peers.Load() == 0 {
		return
	}
	b.mu.Lock()
	if !slices.Contains(b.dirty, channel) {
		b.dirty = append(b.dirty, channel)
	}
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (b *Bus) wakeLocal(channel string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs[channel] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Name implements service.Service.
func (*Bus) Name() string { return "notify bus" }

// Run listens for other replicas' wakes and sends this replica's, until
// ctx ends.
func (b *Bus) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); b.listen(ctx) }()
	go func() { defer wg.Done(); b.send(ctx) }()
	wg.Wait()
}

// send issues NOTIFYs for dirty channels within this replica's share of
// the budget: a token bucket refilled at budget/(peers+1) per second that
// holds at most one token per channel, so the first wake after a quiet
// spell goes at once and a busy replica sends in step with its share.
func (b *Bus) send(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	burst := float64(len(channels))
	tokens, last := burst, time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		case <-timer.C:
		}
		now := time.Now()
		rate := b.budget / float64(b.peers.Load()+1)
		tokens = min(burst, tokens+now.Sub(last).Seconds()*rate)
		last = now
		b.mu.Lock()
		n := min(len(b.dirty), int(tokens))
		due := slices.Clone(b.dirty[:n])
		b.dirty = b.dirty[n:]
		pending := len(b.dirty) > 0
		b.mu.Unlock()
		tokens -= float64(n)
		if n > 0 {
			if _, err := b.pool.Exec(ctx, `SELECT pg_notify(c, $2) FROM unnest($1::text[]) AS c`, due, b.self); err != nil {
				if ctx.Err() == nil {
					b.log.Warn("notify failed; peers will catch up by polling", "err", err)
				}
			} else {
				b.sent.Add(int64(n))
			}
		}
		if pending && rate > 0 {
			timer.Reset(time.Duration((1 - tokens) / rate * float64(time.Second)))
		}
	}
}

// listen holds a dedicated connection that LISTENs on every channel,
// reconnecting with backoff. After a reconnect it wakes every local
// subscriber, since notifications sent meanwhile were lost.
func (b *Bus) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := b.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("listen connection lost; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (b *Bus) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, ch := range channels {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	for _, ch := range channels {
		b.wakeLocal(ch)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Payload != b.self {
			b.received.Add(1)
			b.wakeLocal(n.Channel)
		}
	}
}
